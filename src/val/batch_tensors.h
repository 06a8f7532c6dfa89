// The one seam between the torch-free loader and LibTorch: a loader Batch as tensors on a device.
// Pixels travel as uint8 and are normalised on the device (4x less to copy than float).
#pragma once
#include <torch/torch.h>

#include <string>

#include "data/types.h"

namespace kestrel {

// --device as YOLOv5 takes it: "cpu" (or empty), "0", "cuda", "cuda:1". Throws when CUDA is asked for
// and not available.
torch::Device parse_device(const std::string& device);

// [n,3,h,w] float in 0..1 on `device`, channels-last (models run with channels-last weights).
torch::Tensor batch_images(const Batch& batch, const torch::Device& device);
// [labels,6] float32 (image index, class, x, y, w, h normalized) on `device`.
torch::Tensor batch_targets(const Batch& batch, const torch::Device& device);

}  // namespace kestrel
