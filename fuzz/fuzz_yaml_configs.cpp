// libFuzzer target for the three yaml files a user hands Kestrel: model yamls (parsed and resolved
// into layers), data.yaml and hyp.yaml. The first byte picks the parser; the rest is the file. Bad
// input must end in an exception that names the file, never a crash, a hang or an allocation
// without bound; and a model yaml that resolves must stay within the bounds model_config promises
// (nc 1..100000, 1..65536 channels a layer, at most 1000 repeats), or the target traps.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>

#include "core/hyp.h"
#include "data/index/dataset_config.h"
#include "model/model_config.h"

namespace {

void require(bool ok) {
  if (!ok) __builtin_trap();
}

// data.yaml and hyp.yaml are read from files: one scratch file per fuzzing process.
std::string scratch_file(const std::string& text) {
  static const std::string path = "/tmp/kestrel_fuzz_yaml_" + std::to_string(getpid()) + ".yaml";
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

void check_model(const std::string& text) {
  const kestrel::ModelConfig cfg = kestrel::parse_model_config(text, "fuzz.yaml");
  const kestrel::ModelSpec spec = kestrel::resolve_model(cfg);
  require(spec.nc >= 1 && spec.nc <= 100000);
  for (const kestrel::LayerSpec& l : spec.layers) {
    require(l.c_out >= 0 && l.c_out <= 65536);
    require(l.n >= 1 && l.n <= 1000);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    switch (data[0] % 3) {
      case 0: check_model(text); break;
      case 1: kestrel::load_dataset_config(scratch_file(text)); break;
      default: kestrel::load_hyp(scratch_file(text)); break;
    }
  } catch (const std::exception&) {
    // the expected outcome of bad input: an error the user reads
  }
  return 0;
}
