// libFuzzer target for the torch-free core of the .pt reader. Each input is tried twice: as a
// whole checkpoint archive (zip -> data.pkl -> model walk -> yaml -> tensor values) and as a bare
// pickle, so pickle mutations are explored without having to survive the zip layer. Any exception
// other than FormatError, and any sanitizer report, is a bug.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "model/pickle_reader.h"
#include "model/pt_archive.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kestrel;
  try {
    const PtArchive archive(std::make_shared<const std::vector<uint8_t>>(data, data + size), "fuzz",
                            /*verify_crc=*/false);
    for (const auto& entry : archive.state()) {
      uint64_t numel = 1;
      for (int64_t s : entry.second.sizes) numel *= static_cast<uint64_t>(s);
      if (numel <= 4096) archive.values(entry.second);
    }
  } catch (const FormatError&) {
  }
  try {
    const pickle::Document doc = pickle::parse_pickle({data, size}, "fuzz");
    if (doc.node(doc.root()).kind == pickle::Kind::Dict) pickle_to_yaml(doc, doc.root());
  } catch (const FormatError&) {
  }
  return 0;
}
