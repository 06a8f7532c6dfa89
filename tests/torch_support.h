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

}  // namespace kestrel::test
