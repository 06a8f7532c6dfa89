// BN-sparsity training: the penalty's gradient is S * sign(gamma) on the prunable BatchNorm scales
// only (scaled like the gradients under fp16), decays when asked, and the |gamma| records add up.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <opencv2/imgcodecs.hpp>

#include "model/channel_prune.h"
#include "model/model_config.h"
#include "test_support.h"
#include "train/sparsity.h"

namespace kestrel {
namespace {

TEST(Sparsity, PenaltyIsStrengthTimesSignOnPrunableGammasOnly) {
  DetectionModel m(load_model_config("yolov5n.yaml"), 3);
  for (auto& p : m->parameters()) p.mutable_grad() = torch::zeros_like(p);
  const std::vector<PrunableConv> convs = prunable_convs(*m);
  convs[0].conv->bn->weight.data()[0] = -0.5;  // a negative gamma gets a positive pull
  SparsityTraining s(*m, 1e-3, /*decay=*/false, 10);
  s.add_penalty(0, /*grad_scale=*/4.0);
  for (const PrunableConv& p : convs) {
    const torch::Tensor& g = p.conv->bn->weight;
    EXPECT_TRUE(torch::allclose(g.grad(), 4e-3 * torch::sign(g))) << p.name;
  }
  // model.2.cv1 is tied by the residual add: not penalised.
  for (const auto& p : m->named_parameters())
    if (p.key() == "model.2.cv1.bn.weight") EXPECT_EQ(p.value().grad().abs().sum().item<double>(), 0.0);
  EXPECT_DOUBLE_EQ(SparsityTraining(*m, 1e-3, true, 10).strength_at(5), 1e-3 * 0.55);
  EXPECT_DOUBLE_EQ(SparsityTraining(*m, 1e-3, true, 10).strength_at(10), 1e-4);
}

TEST(Sparsity, RecordsTheGammaDistribution) {
  DetectionModel m(load_model_config("yolov5n.yaml"), 3);
  const std::vector<PrunableConv> convs = prunable_convs(*m);
  int64_t all = 0;
  for (const PrunableConv& p : convs) all += p.conv->bn->weight.numel();
  SparsityTraining s(*m, 1e-4, false, 3);
  EXPECT_EQ(s.share_below(0.01), 0.0);  // fresh BatchNorms: gamma = 1
  torch::NoGradGuard no_grad;
  convs[0].conv->bn->weight.fill_(0.001);
  EXPECT_DOUBLE_EQ(s.share_below(0.01), static_cast<double>(convs[0].conv->bn->weight.numel()) / all);
  s.record_epoch(0);
  s.record_epoch(1);
  const std::string png = test::temp_dir("sparsity_plot") + "/gamma_hist.png";
  s.write_plot(png);
  const cv::Mat img = cv::imread(png);
  ASSERT_FALSE(img.empty());
  EXPECT_EQ(img.cols, 900);
}

}  // namespace
}  // namespace kestrel
