// GradScaler semantics on a CPU: inf gradients skip the step and halve the scale, clean steps grow it
// after 2000 in a row, gradients are unscaled before the clip at norm 10, and with scaling off a
// non-finite gradient still never reaches the weights.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "train/grad_scaler.h"

namespace kestrel {
namespace {

struct Toy {
  torch::Tensor w = torch::ones({3}).requires_grad_(true);
  torch::optim::SGD opt{std::vector<torch::Tensor>{w}, torch::optim::SGDOptions(0.1)};
  std::vector<torch::Tensor> params() { return {w}; }
  void set_grad(std::vector<float> g) { w.mutable_grad() = torch::tensor(g); }
};

TEST(GradScaler, ScaleRuleBacksOffAndGrows) {
  GradScaler s(true);
  EXPECT_EQ(s.state().scale, 65536.0);
  s.update(/*found_inf=*/true);
  EXPECT_EQ(s.state().scale, 32768.0);
  for (int i = 0; i < GradScaler::kGrowthInterval - 1; ++i) s.update(false);
  EXPECT_EQ(s.state().scale, 32768.0);
  EXPECT_EQ(s.state().growth_tracker, GradScaler::kGrowthInterval - 1);
  s.update(false);  // the 2000th clean step in a row
  EXPECT_EQ(s.state().scale, 65536.0);
  EXPECT_EQ(s.state().growth_tracker, 0);
  s.update(false);
  s.update(true);  // an overflow restarts the count
  EXPECT_EQ(s.state().growth_tracker, 0);
  EXPECT_EQ(s.state().scale, 32768.0);
}

TEST(GradScaler, InfGradientSkipsTheStepAndHalvesTheScale) {
  Toy t;
  GradScaler s(true);
  t.set_grad({1.0f, std::numeric_limits<float>::infinity(), 0.0f});
  EXPECT_FALSE(s.step(t.opt, t.params(), 10.0));
  EXPECT_TRUE(torch::equal(t.w, torch::ones({3})));  // untouched
  EXPECT_EQ(s.state().scale, 32768.0);
  t.set_grad({std::nanf(""), 0.0f, 0.0f});
  EXPECT_FALSE(s.step(t.opt, t.params(), 10.0));
  EXPECT_EQ(s.state().scale, 16384.0);
}

TEST(GradScaler, CleanStepUnscalesBeforeStepping) {
  Toy t;
  GradScaler s(true);
  const torch::Tensor loss = (t.w * torch::tensor({1.0f, 2.0f, 3.0f})).sum();
  EXPECT_NEAR(s.scale(loss).item<double>(), 6.0 * 65536, 1e-3);
  s.scale(loss).backward();  // gradients 65536 x (1, 2, 3)
  ASSERT_TRUE(s.step(t.opt, t.params(), 10.0));
  // The step used the true gradient (norm 3.74 < 10, no clipping): w - 0.1 * (1, 2, 3).
  EXPECT_TRUE(torch::allclose(t.w, torch::tensor({0.9f, 0.8f, 0.7f})));
  EXPECT_EQ(s.state().scale, 65536.0);
  EXPECT_EQ(s.state().growth_tracker, 1);
}

TEST(GradScaler, ClipsTheUnscaledGradientAtNormTen) {
  Toy t;
  GradScaler s(true);
  t.set_grad({30.0f * 65536, 40.0f * 65536, 0.0f});  // true norm 50
  ASSERT_TRUE(s.step(t.opt, t.params(), 10.0));
  // Clipped to norm 10: (6, 8, 0); the step is 0.1 of that.
  EXPECT_TRUE(torch::allclose(t.w, torch::tensor({1.0f - 0.6f, 1.0f - 0.8f, 1.0f}), 1e-5, 1e-5));
}

TEST(GradScaler, WithoutScalingANonFiniteGradientIsStillNeverApplied) {
  Toy t;
  GradScaler s(false);
  const torch::Tensor loss = (t.w * 2).sum();
  EXPECT_TRUE(torch::equal(s.scale(loss), loss));
  t.set_grad({std::nanf(""), 1.0f, 1.0f});
  EXPECT_FALSE(s.step(t.opt, t.params(), 10.0));
  EXPECT_TRUE(torch::equal(t.w, torch::ones({3})));
  EXPECT_EQ(s.state().scale, 65536.0);  // no scale to change
  t.set_grad({1.0f, 1.0f, 1.0f});
  EXPECT_TRUE(s.step(t.opt, t.params(), 10.0));
  EXPECT_TRUE(torch::allclose(t.w, torch::full({3}, 0.9f)));
}

}  // namespace
}  // namespace kestrel
