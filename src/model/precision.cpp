// Precision parsing, the bf16 CPU check and the autocast region (see precision.h).
#include "model/precision.h"

#include <fstream>
#include <stdexcept>

#include "model/torch_compat.h"

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

Autocast::Autocast(Precision p, const torch::Device& device) {
  if (p == Precision::fp32) return;
  active_ = true;
  cuda_ = device.is_cuda();
  was_enabled_ = compat::autocast_enabled(cuda_);
  was_dtype_ = compat::autocast_dtype(cuda_);
  compat::set_autocast_enabled(cuda_, true);
  compat::set_autocast_dtype(cuda_, p == Precision::bf16 ? at::kBFloat16 : at::kHalf);
  compat::autocast_enter();
}

Autocast::~Autocast() {
  if (!active_) return;
  compat::autocast_exit();
  compat::set_autocast_enabled(cuda_, was_enabled_);
  compat::set_autocast_dtype(cuda_, was_dtype_);
}

}  // namespace kestrel
