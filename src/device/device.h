// The compute device a run uses: --device parsed as YOLOv5 takes it, the GPU's numeric settings
// (--fast), synchronisation, memory figures and the versions of what LibTorch was built with. Every
// function here also works in a process without a GPU; the CUDA calls run only for a CUDA device.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace kestrel {

// --device as YOLOv5 takes it: "cpu", "0", "cuda", "cuda:1", or "" for the GPU of this process's local
// rank when CUDA is available (GPU 0 outside a data-parallel job) and the CPU otherwise. Throws when
// CUDA is asked for and not available, or the index is past the GPUs visible.
torch::Device parse_device(const std::string& device, int local_rank = 0);

// YOLOv5's default on a GPU is deterministic (cudnn.deterministic, no autotuning, deterministic
// algorithms where they exist: a run repeats bit for bit). fast: cuDNN benchmarks each convolution's
// algorithms once per shape and keeps the fastest, non-deterministic kernels allowed. No-op on a CPU.
void set_cuda_numerics(const torch::Device& device, bool fast);

// Waits for the device's queued work (a no-op on a CPU).
void synchronize(const torch::Device& device);

// The GPU's PCI bus id ("0000:3B:00.0"), by which NVML finds the same GPU; "" on a CPU.
std::string pci_bus_id(const torch::Device& device);

// Device memory: the caching allocator's peak since reset_peak_memory (reserved bytes, what the GPU
// cannot give to anyone else), and what a run could use: free memory plus what this process already
// reserved. Zero on a CPU.
void reset_peak_memory(const torch::Device& device);
double peak_memory_bytes(const torch::Device& device);
double device_memory_available(const torch::Device& device);

// What this LibTorch was built with and loads: "2.11.0", CUDA runtime "13.0", cuDNN "9.19.0" ("" where
// the build has none; NCCL's is distributed/process_group.h's). None of them needs a GPU.
struct BuildVersions {
  std::string libtorch, cuda, cudnn;
};
BuildVersions build_versions();

}  // namespace kestrel
