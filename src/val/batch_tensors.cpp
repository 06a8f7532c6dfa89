// Batch -> tensors.
#include "val/batch_tensors.h"

namespace kestrel {

torch::Device parse_device(const std::string& device) {
  if (device.empty() || device == "cpu") return torch::kCPU;
  std::string s = device.rfind("cuda", 0) == 0 ? device : "cuda:" + device;
  if (s == "cuda") s = "cuda:0";
  if (!torch::cuda::is_available()) throw std::runtime_error("--device " + device + ": CUDA is not available in this build/machine");
  return torch::Device(s);
}

torch::Tensor batch_images(const Batch& batch, const torch::Device& device) {
  // from_blob does not copy; the first .to() below makes the copy, so the loader may reuse its
  // buffer as soon as this returns.
  torch::Tensor u8 = torch::from_blob(const_cast<uint8_t*>(batch.pixels.data()), {batch.n, 3, batch.h, batch.w}, torch::kUInt8);
  if (device.is_cuda()) u8 = u8.to(device, /*non_blocking=*/false);
  // Channels-last: the layout the model's weights use (set_memory_format), several times faster
  // for CPU convolutions than NCHW. One pass converts type and layout, one scales.
  torch::Tensor x = torch::empty(u8.sizes(), u8.options().dtype(torch::kFloat32)
                                                   .memory_format(torch::MemoryFormat::ChannelsLast));
  x.copy_(u8);
  return x.div_(255.0f);
}

torch::Tensor batch_targets(const Batch& batch, const torch::Device& device) {
  const int64_t n = static_cast<int64_t>(batch.num_labels());
  torch::Tensor t = torch::from_blob(const_cast<float*>(batch.labels.data()), {n, 6}, torch::kFloat32).clone();
  return device.is_cpu() ? t : t.to(device);
}

}  // namespace kestrel
