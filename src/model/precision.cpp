// Precision parsing, the bf16 CPU check and the autocast region (see precision.h).
#include "model/precision.h"

#include <fstream>
#include <stdexcept>

#include <ATen/autocast_mode.h>

namespace kestrel {

Precision parse_precision(const std::string& name) {
  if (name == "off" || name == "fp32") return Precision::fp32;
  if (name == "bf16") return Precision::bf16;
  if (name == "fp16") return Precision::fp16;
  throw std::invalid_argument("precision '" + name + "': expected off, bf16 or fp16");
}

std::string precision_name(Precision p) {
  switch (p) {
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
    default: return "fp32";
  }
}

void check_precision_supported(Precision p, const torch::Device& device) {
  if (p == Precision::fp16 && !device.is_cuda())
    throw std::runtime_error("fp16 mixed precision needs a CUDA --device; on a CPU use bf16 (--amp bf16)");
}

Precision inference_precision(bool half, const torch::Device& device) {
  if (!half) return Precision::fp32;
  return device.is_cuda() ? Precision::fp16 : Precision::bf16;
}

bool cpu_has_bf16() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0)
      return line.find(" avx512_bf16") != std::string::npos || line.find(" amx_bf16") != std::string::npos;
  return false;
}

// As torch.autocast: the region's switch and dtype are thread-local per device type, and the cast
// cache of weights lives until the outermost region closes.
Autocast::Autocast(Precision p, const torch::Device& device) {
  if (p == Precision::fp32) return;
  active_ = true;
  type_ = device.type();
  was_enabled_ = at::autocast::is_autocast_enabled(type_);
  was_dtype_ = at::autocast::get_autocast_dtype(type_);
  at::autocast::set_autocast_enabled(type_, true);
  at::autocast::set_autocast_dtype(type_, p == Precision::bf16 ? at::kBFloat16 : at::kHalf);
  at::autocast::increment_nesting();
}

Autocast::~Autocast() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(type_, was_enabled_);
  at::autocast::set_autocast_dtype(type_, was_dtype_);
}

}  // namespace kestrel
