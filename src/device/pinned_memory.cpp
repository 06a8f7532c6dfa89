// Pinned host buffers as tensors from LibTorch's pinned (CUDA host) allocator (see pinned_memory.h).
#include "device/pinned_memory.h"

#include <c10/cuda/CUDAGuard.h>

namespace kestrel {

PinnedMemory::PinnedMemory(const torch::Device& device) : device_(device) {
  if (!device.is_cuda()) throw std::invalid_argument("pinned memory serves copies to a CUDA device, not " + device.str());
}

void* PinnedMemory::do_allocate(std::size_t bytes, std::size_t alignment) {
  c10::cuda::CUDAGuard guard(device_.index());  // the pages are registered with this device's context
  // The pinned allocator's blocks are page-aligned, more than any alignment a buffer asks for.
  (void)alignment;
  torch::Tensor block = torch::empty({static_cast<int64_t>(std::max<std::size_t>(bytes, 1))},
                                     torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true));
  std::lock_guard<std::mutex> lock(mu_);
  void* p = block.data_ptr();
  blocks_.emplace(p, std::move(block));
  return p;
}

void PinnedMemory::do_deallocate(void* p, std::size_t, std::size_t) {
  std::lock_guard<std::mutex> lock(mu_);
  blocks_.erase(p);
}

}  // namespace kestrel
