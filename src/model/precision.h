// Numeric precision of a forward pass: fp32, or mixed precision by autocast (bf16 on CPUs and GPUs,
// fp16 on CUDA). Weights stay fp32 in every mode; autocast casts them per op (and caches the casts
// for the region), and the Detect head returns fp32 so that decoding and the loss never round
// pixel coordinates to 8 mantissa bits.
#pragma once
#include <torch/torch.h>

#include <string>

namespace kestrel {

enum class Precision { fp32, bf16, fp16 };

// "off"/"fp32", "bf16", "fp16"; throws std::invalid_argument naming the flag's choices.
Precision parse_precision(const std::string& name);
std::string precision_name(Precision p);  // "fp32", "bf16", "fp16"

// fp16 autocast needs CUDA in LibTorch; bf16 runs on both. Throws std::runtime_error in plain words.
void check_precision_supported(Precision p, const torch::Device& device);

// --half of val and detect: fp16 on CUDA, bf16 on a CPU (LibTorch's CPU autocast has no fp16).
Precision inference_precision(bool half, const torch::Device& device);

// The CPU advertises bf16 instructions (avx512_bf16 or amx_bf16 in /proc/cpuinfo): without them
// bf16 runs emulated, slower than fp32.
bool cpu_has_bf16();

// RAII autocast region for `device` at `p` (no-op for fp32); restores the previous state on exit.
class Autocast {
 public:
  Autocast(Precision p, const torch::Device& device);
  ~Autocast();
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  bool active_ = false, was_enabled_ = false;
  c10::DeviceType type_ = c10::DeviceType::CPU;
  at::ScalarType was_dtype_ = at::kFloat;
};

}  // namespace kestrel
