// The anchor-free loss against Ultralytics' v8DetectionLoss (tests/testdata/reference/ultralytics/
// loss_*.json): seeded raw head maps of a 64x96 input with nc=3 and given boxes, one case with a box
// under the stride and overlapping boxes, one with an image without boxes. The assigner's choices
// must be the same cells and boxes; the three terms and the gradients of their sum agree to float
// rounding.
#include <iostream>

#include "torch_support.h"
#include "train/dfl_loss.h"

namespace kestrel {
namespace {

class DflLossParity : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ref_ = &test::reference("ultralytics/loss_" + GetParam() + ".json");
    boxes_ = test::json_tensor((*ref_)["boxes"]).requires_grad_(true);
    scores_ = test::json_tensor((*ref_)["scores"]).requires_grad_(true);
  }
  // The head's per-level maps [bs, 64 + nc, ny, nx] from Ultralytics' flattened boxes and scores.
  std::vector<torch::Tensor> raw_levels() const {
    const torch::Tensor all = torch::cat({boxes_, scores_}, 1);
    std::vector<torch::Tensor> raw;
    int64_t at = 0;
    for (const auto& [h, w] : {std::pair<int64_t, int64_t>{8, 12}, {4, 6}, {2, 3}}) {
      raw.push_back(all.slice(2, at, at + h * w).reshape({all.size(0), all.size(1), h, w}));
      at += h * w;
    }
    return raw;
  }

  const nlohmann::json* ref_ = nullptr;
  torch::Tensor boxes_, scores_;
};

double max_diff(const torch::Tensor& a, const torch::Tensor& b, const std::string& what) {
  EXPECT_EQ(a.sizes(), b.sizes()) << what;
  const double d = (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
  std::cout << "  max |diff| " << what << ": " << d << " (largest " << b.abs().max().item<double>() << ")\n";
  return d;
}

TEST_P(DflLossParity, AssignmentTermsAndGradients) {
  DflDetectionLoss loss(DflLossConfig{.nc = 3});
  Assignment a;
  const auto [total, terms] = loss(raw_levels(), test::json_tensor((*ref_)["targets"]), &a);
  const torch::Tensor fg_ref = test::json_tensor((*ref_)["fg_mask"], torch::kUInt8).to(torch::kBool);
  ASSERT_TRUE(torch::equal(a.fg_mask, fg_ref)) << "the assigner chose other cells";
  const torch::Tensor idx_ref = test::json_tensor((*ref_)["target_gt_idx"], torch::kLong);
  EXPECT_TRUE(torch::equal(a.target_gt_idx.index({fg_ref}), idx_ref.index({fg_ref}))) << "cells learn other boxes";
  EXPECT_LT(max_diff(a.target_bboxes, test::json_tensor((*ref_)["target_bboxes"]), "target boxes (px)"), 1e-4);

  // Terms: float32 sums of a few hundred values, so agreement to a few units in the 7th digit.
  const torch::Tensor terms_ref = test::json_tensor((*ref_)["loss"]);
  for (int64_t i = 0; i < 3; ++i) EXPECT_NEAR(terms[i].item<double>(), terms_ref[i].item<double>(), 2e-6 * std::max(1.0, terms_ref[i].abs().item<double>())) << i;
  total.backward();
  const torch::Tensor gb = test::json_tensor((*ref_)["grad_boxes"]), gs = test::json_tensor((*ref_)["grad_scores"]);
  EXPECT_LT(max_diff(boxes_.grad(), gb, "d/d box bins"), 1e-5 * std::max(1.0, gb.abs().max().item<double>()));
  EXPECT_LT(max_diff(scores_.grad(), gs, "d/d class logits"), 1e-5 * std::max(1.0, gs.abs().max().item<double>()));
}

INSTANTIATE_TEST_SUITE_P(Cases, DflLossParity, ::testing::Values("two_images", "empty_image"));

TEST(DflLoss, NoBoxesLeavesOnlyTheClassTerm) {
  DflDetectionLoss loss(DflLossConfig{.nc = 2});
  std::vector<torch::Tensor> raw = {torch::zeros({1, 66, 4, 4}, torch::requires_grad()), torch::zeros({1, 66, 2, 2}),
                                    torch::zeros({1, 66, 1, 1})};
  const auto [total, terms] = loss(raw, torch::zeros({0, 6}));
  EXPECT_EQ(terms[0].item<double>(), 0.0);
  EXPECT_EQ(terms[2].item<double>(), 0.0);
  // Every logit 0 against target 0: BCE log 2 each, over 21 cells x 2 classes, divided by max(sum, 1) = 1.
  EXPECT_NEAR(terms[1].item<double>(), 0.5 * 21 * 2 * std::log(2.0), 1e-5);
  total.backward();
  EXPECT_TRUE(raw[0].grad().defined());
}

}  // namespace
}  // namespace kestrel
