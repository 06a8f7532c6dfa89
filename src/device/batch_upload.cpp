// Batches to the device: pinned buffers, side-stream copies and their events (see batch_upload.h).
#include "device/batch_upload.h"

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstring>

#include "device/pinned_memory.h"

namespace kestrel {

struct BatchUploader::Cuda {
  explicit Cuda(const torch::Device& d) : memory(d), copy_stream(c10::cuda::getStreamFromPool(false, d.index())) {}
  PinnedMemory memory;
  c10::cuda::CUDAStream copy_stream;
};

namespace {

Batch without_pixels(const Batch& b) {
  Batch h;
  h.n = b.n, h.h = b.h, h.w = b.w;
  h.labels = b.labels, h.paths = b.paths, h.shapes = b.shapes;
  return h;
}

torch::Tensor host_pixels(const Batch& b) {
  return torch::from_blob(const_cast<uint8_t*>(b.pixels.data()), {b.n, 3, b.h, b.w}, torch::kUInt8);
}

torch::Tensor host_labels(const Batch& b) {
  return torch::from_blob(const_cast<float*>(b.labels.data()), {static_cast<int64_t>(b.num_labels()), 6}, torch::kFloat32);
}

}  // namespace

torch::Tensor normalise_images(const torch::Tensor& u8) {
  torch::Tensor x = torch::empty(u8.sizes(), u8.options().dtype(torch::kFloat32).memory_format(torch::MemoryFormat::ChannelsLast));
  x.copy_(u8);
  return x.div_(255.0f);
}

BatchUploader::BatchUploader(const torch::Device& device) : device_(device) {
  if (device.is_cuda()) cuda_ = std::make_unique<Cuda>(device);
}

BatchUploader::~BatchUploader() = default;

std::pmr::memory_resource* BatchUploader::host_memory() { return cuda_ ? &cuda_->memory : nullptr; }

DeviceBatch BatchUploader::upload(const Batch& batch) {
  DeviceBatch d;
  if (!cuda_) {  // reads the loader's buffer now: nothing is left to wait for
    d = upload_now(batch, device_);
    d.host = without_pixels(batch);
    return d;
  }
  d.host = without_pixels(batch);
  c10::cuda::CUDAGuard guard(device_.index());
  // Destinations come from the compute stream's pool, so ready() and everything after it use them in
  // stream order; the copy stream first waits for the compute stream's work queued so far (the
  // blocks may have been freed by it), which is the step before the one this copy overlaps.
  const c10::cuda::CUDAStream compute = c10::cuda::getCurrentCUDAStream(device_.index());
  d.images = torch::empty({batch.n, 3, batch.h, batch.w}, torch::TensorOptions().dtype(torch::kUInt8).device(device_));
  d.targets = torch::empty({static_cast<int64_t>(batch.num_labels()), 6}, torch::TensorOptions().dtype(torch::kFloat32).device(device_));
  // Labels are a few KB in a pageable vector: staged through a pinned tensor so their copy is
  // asynchronous too (the pinned allocator caches these blocks).
  torch::Tensor labels = torch::empty(d.targets.sizes(), torch::TensorOptions().dtype(torch::kFloat32).pinned_memory(true));
  if (labels.numel()) std::memcpy(labels.data_ptr(), batch.labels.data(), labels.numel() * sizeof(float));
  at::cuda::CUDAEvent queued;
  queued.record(compute);
  queued.block(cuda_->copy_stream);
  auto copied = std::make_shared<at::cuda::CUDAEvent>();
  {
    c10::cuda::CUDAStreamGuard on_copy_stream(cuda_->copy_stream);
    d.images.copy_(host_pixels(batch), /*non_blocking=*/true);
    d.targets.copy_(labels, /*non_blocking=*/true);
    copied->record(cuda_->copy_stream);
  }
  d.copied = copied;
  return d;
}

void BatchUploader::release_host(const DeviceBatch& b) {
  if (b.copied) std::static_pointer_cast<at::cuda::CUDAEvent>(b.copied)->synchronize();
}

const torch::Tensor& BatchUploader::ready(DeviceBatch& b) {
  if (b.normalised) return b.images;
  if (b.copied) {
    c10::cuda::CUDAGuard guard(device_.index());
    std::static_pointer_cast<at::cuda::CUDAEvent>(b.copied)->block(c10::cuda::getCurrentCUDAStream(device_.index()));
  }
  b.images = normalise_images(b.images);
  b.normalised = true;
  return b.images;
}

DeviceBatch upload_now(const Batch& batch, const torch::Device& device) {
  DeviceBatch d;  // no host copy: the caller still holds the batch
  torch::Tensor u8 = host_pixels(batch);
  // from_blob does not copy: the copy to the device (or the CPU conversion) does, before this returns.
  d.images = normalise_images(device.is_cuda() ? u8.to(device) : u8);
  d.targets = device.is_cuda() ? host_labels(batch).to(device) : host_labels(batch).clone();
  d.normalised = true;
  return d;
}

}  // namespace kestrel
