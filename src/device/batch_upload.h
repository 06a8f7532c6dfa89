// The one seam between the torch-free loader and LibTorch: a loader Batch becomes tensors on the
// device. Pixels travel as uint8 (4x less than float) and are normalised to float 0..1, channels-last,
// on the device. On a GPU the copy is asynchronous and overlaps the previous step:
//   - the loader's batch buffers are pinned (host_memory()), allocated once and reused;
//   - upload() queues the copy on a side stream and records an event after it; the host returns at once;
//   - ready() makes the compute stream wait for that event (a GPU-side wait, no host stall), then
//     normalises on the compute stream;
//   - release_host() waits (on the host) for the copy to have read the pinned buffer, so the loader
//     may refill it: by then the copy ran during the previous step and has long finished.
// On a CPU the same calls run: upload() converts at once and the others are no-ops.
#pragma once
#include <torch/torch.h>

#include <memory>
#include <memory_resource>

#include "data/types.h"

namespace kestrel {

struct DeviceBatch {
  torch::Tensor images;   // uint8 NCHW on the device until ready(); then float 0..1, channels-last
  torch::Tensor targets;  // [labels,6] float32 (image index, class, x, y, w, h normalised) on the device
  Batch host;             // upload(): the batch's labels, paths and shapes without its pixels, valid
                          // after the loader reuses its buffer (the report of a step that went wrong)
  std::shared_ptr<void> copied;  // CUDA: the event recorded after the copies (opaque here)
  bool normalised = false;
  explicit operator bool() const { return images.defined(); }
};

class BatchUploader {
 public:
  explicit BatchUploader(const torch::Device& device);
  ~BatchUploader();
  BatchUploader(const BatchUploader&) = delete;
  BatchUploader& operator=(const BatchUploader&) = delete;

  const torch::Device& device() const { return device_; }
  // What the loader should allocate its batch buffers from: pinned memory for a GPU, nullptr (the
  // default heap) on a CPU.
  std::pmr::memory_resource* host_memory();
  DeviceBatch upload(const Batch& batch);
  void release_host(const DeviceBatch& b);
  // The images as the model takes them, on the compute stream; idempotent.
  const torch::Tensor& ready(DeviceBatch& b);

 private:
  torch::Device device_;
  struct Cuda;  // side stream and pinned memory, kept out of this header (CUDA headers)
  std::unique_ptr<Cuda> cuda_;
};

// A batch on the device now (upload + ready), without the host copy (the caller still holds the batch):
// validation, detection and one-off measurements.
DeviceBatch upload_now(const Batch& batch, const torch::Device& device);

// uint8 NCHW -> float 0..1 channels-last, in one conversion pass and one scaling pass, on the tensor's
// device: the layout the models run in (set_memory_format), several times faster for CPU convolutions.
torch::Tensor normalise_images(const torch::Tensor& u8);

}  // namespace kestrel
