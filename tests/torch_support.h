// Test helper for LibTorch tests: a JSON tensor {"shape","dtype","data"} as a torch::Tensor.
#pragma once
#include <torch/torch.h>

#include "test_support.h"

namespace kestrel::test {

inline torch::Tensor json_tensor(const nlohmann::json& t, torch::Dtype dtype = torch::kFloat32) {
  const auto shape = json_shape(t);
  const auto vals = json_doubles(t);
  auto out = torch::from_blob(const_cast<double*>(vals.data()), {static_cast<int64_t>(vals.size())},
                              torch::kFloat64)
                 .clone();
  // Cast double -> float32 directly reproduces the generator's exact float32 values.
  return out.to(dtype).reshape(shape);
}

// The fixed image both reference generators feed their models (YOLOv5's 1x3x160x160, Ultralytics'
// 1x3x64x96): k[c,y,x] = (67c + 29y + 13x + (x*y) % 11) % 256 as uint8, then float32(k) / 255.
inline torch::Tensor fixed_input(int64_t height, int64_t width) {
  auto k = torch::empty({1, 3, height, width}, torch::kUInt8);
  auto a = k.accessor<uint8_t, 4>();
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t y = 0; y < height; ++y)
      for (int64_t x = 0; x < width; ++x) a[0][c][y][x] = static_cast<uint8_t>((67 * c + 29 * y + 13 * x + (x * y) % 11) % 256);
  return k.to(torch::kFloat32) / 255.0f;
}

}  // namespace kestrel::test
