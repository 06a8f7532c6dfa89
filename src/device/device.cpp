// Device parsing, CUDA numerics, memory figures and build versions (see device.h).
#include "device/device.h"

#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>

namespace kestrel {

torch::Device parse_device(const std::string& device, int local_rank) {
  if (device.empty()) return torch::cuda::is_available() ? parse_device(std::to_string(local_rank)) : torch::Device(torch::kCPU);
  if (device == "cpu") return torch::kCPU;
  std::string s = device.rfind("cuda", 0) == 0 ? device : "cuda:" + device;
  if (s == "cuda") s = "cuda:0";
  if (!torch::cuda::is_available()) throw std::runtime_error("--device " + device + ": CUDA is not available (no NVIDIA GPU or driver on this machine)");
  torch::Device d(s);
  const int64_t n = static_cast<int64_t>(torch::cuda::device_count());
  if (d.index() >= n)
    throw std::runtime_error("--device " + device + ": this machine has " + std::to_string(n) + " GPU(s) visible (0.." +
                             std::to_string(n - 1) + "); check CUDA_VISIBLE_DEVICES");
  return d;
}

void set_cuda_numerics(const torch::Device& device, bool fast) {
  if (!device.is_cuda()) return;
  at::globalContext().setBenchmarkCuDNN(fast);
  at::globalContext().setDeterministicCuDNN(!fast);
  // warn_only: an op with no deterministic CUDA kernel warns once instead of stopping the run.
  at::globalContext().setDeterministicAlgorithms(!fast, /*warn_only=*/true);
}

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) c10::cuda::device_synchronize();
}

std::string pci_bus_id(const torch::Device& device) {
  if (!device.is_cuda()) return "";
  char id[32] = {};
  C10_CUDA_CHECK(cudaDeviceGetPCIBusId(id, sizeof id, device.index()));
  return id;
}

void reset_peak_memory(const torch::Device& device) {
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
}

double peak_memory_bytes(const torch::Device& device) {
  if (!device.is_cuda()) return 0;
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
  return static_cast<double>(stats.reserved_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].peak);
}

double device_memory_available(const torch::Device& device) {
  if (!device.is_cuda()) return 0;
  c10::cuda::CUDAGuard guard(device.index());
  size_t free_bytes = 0, total_bytes = 0;
  C10_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
  const auto reserved = stats.reserved_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].current;
  return static_cast<double>(free_bytes) + static_cast<double>(reserved);
}

BuildVersions build_versions() {
  BuildVersions v;
  v.libtorch = TORCH_VERSION;
  const auto& hooks = at::detail::getCUDAHooks();
  if (const long r = hooks.versionCUDART(); r > 0) v.cuda = std::to_string(r / 1000) + "." + std::to_string(r % 1000 / 10);  // 13000 -> 13.0
  if (hooks.hasCuDNN()) {
    const long c = hooks.versionCuDNN();  // 91900 -> 9.19.0
    v.cudnn = std::to_string(c / 10000) + "." + std::to_string(c / 100 % 100) + "." + std::to_string(c % 100);
  }
  return v;
}

}  // namespace kestrel
