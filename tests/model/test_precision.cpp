// Mixed precision: the autocast region turns convolutions to bf16 on a CPU and restores the state it
// found, nested regions included; fp16 is refused on a CPU; the Detect head hands back fp32.
#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/detection_model.h"
#include "model/model_config.h"
#include "model/precision.h"

namespace kestrel {
namespace {

TEST(Precision, ParsesTheFlagsChoices) {
  EXPECT_EQ(parse_precision("off"), Precision::fp32);
  EXPECT_EQ(parse_precision("fp32"), Precision::fp32);
  EXPECT_EQ(parse_precision("bf16"), Precision::bf16);
  EXPECT_EQ(parse_precision("fp16"), Precision::fp16);
  EXPECT_THROW(parse_precision("int8"), std::invalid_argument);
  EXPECT_EQ(precision_name(Precision::bf16), "bf16");
  EXPECT_THROW(check_precision_supported(Precision::fp16, torch::kCPU), std::runtime_error);
  EXPECT_NO_THROW(check_precision_supported(Precision::bf16, torch::kCPU));
  EXPECT_EQ(inference_precision(true, torch::kCPU), Precision::bf16);
  EXPECT_EQ(inference_precision(false, torch::kCPU), Precision::fp32);
}

TEST(Precision, AutocastRegionCastsConvolutionsAndRestores) {
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 4, 3));
  const torch::Tensor x = torch::rand({1, 3, 8, 8});
  EXPECT_EQ(conv(x).scalar_type(), torch::kFloat);
  {
    Autocast outer(Precision::bf16, torch::kCPU);
    EXPECT_EQ(conv(x).scalar_type(), torch::kBFloat16);
    {
      Autocast inner(Precision::fp32, torch::kCPU);  // fp32 is no region at all
      EXPECT_EQ(conv(x).scalar_type(), torch::kBFloat16);
    }
    EXPECT_TRUE(at::autocast::is_autocast_enabled(at::kCPU));
  }
  EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
  EXPECT_EQ(conv(x).scalar_type(), torch::kFloat);
  EXPECT_EQ(conv->weight.scalar_type(), torch::kFloat);  // weights stay fp32
}

TEST(Precision, DetectHeadReturnsFp32UnderAutocast) {
  DetectionModel model(load_model_config("yolov5n.yaml"), 3);
  model->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::rand({1, 3, 64, 64});
  std::vector<torch::Tensor> raw;
  {
    Autocast autocast(Precision::bf16, torch::kCPU);
    raw = model->forward(x);
  }
  for (const torch::Tensor& r : raw) EXPECT_EQ(r.scalar_type(), torch::kFloat);
  const torch::Tensor fp32 = model->forward(x)[0];
  // bf16 keeps ~3 significant digits: the logits agree loosely, not exactly.
  EXPECT_FALSE(torch::equal(raw[0], fp32));
  EXPECT_LT((raw[0] - fp32).abs().max().item<double>(), 0.25);
}

}  // namespace
}  // namespace kestrel
