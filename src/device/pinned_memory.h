// Page-locked ("pinned") host memory for the loader's batch buffers, as a std::pmr::memory_resource so
// that data/ stays free of LibTorch: the loader allocates its reused slots through it once, and a copy
// from such a buffer to a GPU is a DMA the copy engine runs while the GPU computes (from pageable
// memory the driver stages it through a bounce buffer, synchronously).
#pragma once
#include <torch/torch.h>

#include <map>
#include <memory_resource>
#include <mutex>

namespace kestrel {

class PinnedMemory : public std::pmr::memory_resource {
 public:
  // Memory pinned for copies to `device` (its CUDA context); needs CUDA.
  explicit PinnedMemory(const torch::Device& device);

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override;
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }

  torch::Device device_;
  std::mutex mu_;
  std::map<void*, torch::Tensor> blocks_;  // each allocation is a pinned uint8 tensor kept alive here
};

}  // namespace kestrel
