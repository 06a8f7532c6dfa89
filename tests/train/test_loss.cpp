// YoloLoss (YOLOv5 v7.0 ComputeLoss) against the reference vectors loss_*.json: build_targets
// entries, per-level CIoU and objectness BCE, the loss and its items, and dloss/dp.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "train/loss.h"
#include "torch_support.h"

namespace kestrel {
namespace {

using test::json_tensor;
using test::reference;

struct LossCase {
  const nlohmann::json* ref;
  LossConfig config;
  std::vector<torch::Tensor> p;  // leaves requiring grad
  torch::Tensor targets;
};

LossCase load_case(const std::string& file) {
  LossCase c;
  c.ref = &reference(file);
  const auto& r = *c.ref;
  const auto& hyp = r["hyp"];
  c.config.nc = r["nc"];
  c.config.nl = r["nl"];
  c.config.na = r["na"];
  std::vector<torch::Tensor> anchors;
  for (const auto& level : r["outputs"]["levels"]) anchors.push_back(json_tensor(level["anchors_grid_units"]));
  c.config.anchors = torch::stack(anchors);
  c.config.box = hyp["box"];
  c.config.obj = hyp["obj"];
  c.config.cls = hyp["cls"];
  c.config.cls_pw = hyp["cls_pw"];
  c.config.obj_pw = hyp["obj_pw"];
  c.config.anchor_t = hyp["anchor_t"];
  c.config.fl_gamma = hyp["fl_gamma"];
  c.config.label_smoothing = hyp["label_smoothing"];
  c.config.balance = r["balance"].get<std::vector<double>>();
  for (const auto& pi : r["inputs"]["p"]) c.p.push_back(json_tensor(pi).requires_grad_(true));
  c.targets = json_tensor(r["inputs"]["targets"]);
  return c;
}

// Element-wise |actual - expected| <= abs_tol + rel_tol*|expected|; reports the first few misses.
void expect_close(const torch::Tensor& actual, const torch::Tensor& expected, double abs_tol,
                  double rel_tol, const std::string& what) {
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  const auto a = actual.detach().to(torch::kFloat64).flatten();
  const auto e = expected.to(torch::kFloat64).flatten();
  const auto bad = ((a - e).abs() > abs_tol + rel_tol * e.abs()).nonzero().flatten();
  for (int64_t k = 0; k < std::min<int64_t>(bad.size(0), 5); ++k) {
    const int64_t i = bad[k].item<int64_t>();
    ADD_FAILURE() << what << " [" << i << "]: " << a[i].item<double>() << " vs " << e[i].item<double>();
  }
  EXPECT_EQ(bad.size(0), 0) << what << ": " << bad.size(0) << " of " << a.size(0) << " differ";
}

void expect_rel(double actual, double expected, double rel, const std::string& what) {
  EXPECT_LE(std::abs(actual - expected), rel * std::abs(expected)) << what << ": " << actual << " vs " << expected;
}

void expect_equal(const torch::Tensor& actual, const torch::Tensor& expected, const std::string& what) {
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  EXPECT_TRUE(torch::equal(actual.contiguous(), expected.to(actual.dtype()))) << what;
}

class LossReference : public ::testing::TestWithParam<const char*> {};

TEST_P(LossReference, BuildTargetsMatchesEntryForEntry) {
  const auto c = load_case(GetParam());
  const auto levels = YoloLoss(c.config).build_targets(c.p, c.targets);
  const auto& ref_levels = (*c.ref)["outputs"]["levels"];
  ASSERT_EQ(levels.size(), ref_levels.size());
  for (size_t i = 0; i < levels.size(); ++i) {
    SCOPED_TRACE("level " + std::to_string(i));
    const auto& r = ref_levels[i];
    const auto& lt = levels[i];
    expect_equal(lt.tcls, json_tensor(r["tcls"], torch::kLong), "tcls");
    expect_equal(lt.b, json_tensor(r["b"], torch::kLong), "b");
    expect_equal(lt.a, json_tensor(r["a"], torch::kLong), "a");
    expect_equal(lt.gj, json_tensor(r["gj"], torch::kLong), "gj");
    expect_equal(lt.gi, json_tensor(r["gi"], torch::kLong), "gi");
    expect_equal(lt.tbox, json_tensor(r["tbox"]), "tbox");  // exact: float32 as YOLOv5
    expect_equal(lt.anch, json_tensor(r["anch"]), "anch");
  }
}

TEST_P(LossReference, LossItemsAndDiagnosticsMatch) {
  const auto c = load_case(GetParam());
  const auto& out = (*c.ref)["outputs"];
  LossBreakdown breakdown;
  const auto [loss, items] = YoloLoss(c.config)(c.p, c.targets, &breakdown);
  ASSERT_EQ(loss.sizes(), torch::IntArrayRef({1}));
  EXPECT_FALSE(items.requires_grad());
  expect_rel(loss.item<double>(), out["loss"], 1e-5, "loss");
  expect_rel(items[0].item<double>(), out["lbox"], 1e-5, "lbox");
  expect_rel(items[1].item<double>(), out["lobj"], 1e-5, "lobj");
  expect_rel(items[2].item<double>(), out["lcls"], 1e-5, "lcls");
  expect_close(items, json_tensor(out["loss_items"]), 0, 1e-5, "loss_items");
  for (size_t i = 0; i < out["levels"].size(); ++i) {
    SCOPED_TRACE("level " + std::to_string(i));
    const auto& r = out["levels"][i];
    expect_close(breakdown.ciou[i], json_tensor(r["ciou"]), 1e-7, 1e-5, "ciou");
    expect_rel(breakdown.obj_bce_mean[i].item<double>(), r["obj_bce_mean"], 1e-5, "obj_bce_mean");
  }
}

TEST_P(LossReference, GradientsMatch) {
  const auto c = load_case(GetParam());
  const auto& levels = (*c.ref)["outputs"]["levels"];
  YoloLoss(c.config)(c.p, c.targets).first.sum().backward();
  for (size_t i = 0; i < c.p.size(); ++i) {
    SCOPED_TRACE("level " + std::to_string(i));
    const auto& r = levels[i];
    const auto grad = c.p[i].grad();
    ASSERT_TRUE(grad.defined());
    if (r.contains("grad_p")) {
      const auto expected = json_tensor(r["grad_p"]);
      expect_close(grad, expected, 1e-6 * expected.abs().max().item<double>(), 1e-4, "grad_p");
    } else {  // nc=80: box/obj channels in full, the rest through norms
      const auto expected = json_tensor(r["grad_p_channels_0_4"]);
      expect_close(grad.slice(4, 0, 5), expected, 1e-6 * grad.abs().max().item<double>(), 1e-4,
                   "grad_p[..., 0:5]");
      expect_rel(grad.to(torch::kFloat64).norm().item<double>(), r["grad_p_l2"], 1e-4, "grad_p_l2");
      expect_rel(grad.to(torch::kFloat64).abs().sum().item<double>(), r["grad_p_abs_sum"], 1e-4,
                 "grad_p_abs_sum");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllFiles, LossReference,
                         ::testing::Values("loss_nc80.json", "loss_nc3.json", "loss_nc3_ls01.json",
                                           "loss_nc3_edges.json", "loss_nc3_border.json"),
                         [](const auto& info) {
                           std::string name = info.param;
                           name = name.substr(5, name.size() - 10);  // strip "loss_" and ".json"
                           return name;
                         });

TEST(LossConfig, GainsFromHypMatchTrainPyScaling) {
  for (const char* file : {"loss_nc80.json", "loss_nc3.json"}) {
    const auto& r = reference(file);
    const auto c = loss_config_from_hyp(Hyp{}, r["nc"], r["nl"], r["imgsz"], torch::zeros({3, 3, 2}));
    EXPECT_EQ(c.box, r["hyp"]["box"].get<double>()) << file;
    EXPECT_EQ(c.obj, r["hyp"]["obj"].get<double>()) << file;
    EXPECT_EQ(c.cls, r["hyp"]["cls"].get<double>()) << file;
    EXPECT_EQ(c.na, 3);
    EXPECT_EQ(c.balance, r["balance"].get<std::vector<double>>());
  }
  EXPECT_EQ(default_balance(5), (std::vector<double>{4.0, 1.0, 0.25, 0.06, 0.02}));
}

TEST(YoloLoss, NoTargetsGivesObjectnessOnly) {
  auto c = load_case("loss_nc3.json");
  LossBreakdown breakdown;
  const auto [loss, items] = YoloLoss(c.config)(c.p, torch::zeros({0, 6}), &breakdown);
  EXPECT_EQ(items[0].item<double>(), 0.0);
  EXPECT_EQ(items[2].item<double>(), 0.0);
  double expected_lobj = 0;
  for (size_t i = 0; i < c.p.size(); ++i) {
    EXPECT_EQ(breakdown.ciou[i].numel(), 0);
    const auto bce = torch::binary_cross_entropy_with_logits(c.p[i].detach().select(4, 4),
                                                             torch::zeros_like(c.p[i].select(4, 4)));
    expected_lobj += bce.item<double>() * c.config.balance[i];
  }
  expect_rel(items[1].item<double>(), expected_lobj * c.config.obj, 1e-5, "lobj");
  loss.backward();
  EXPECT_GT(c.p[0].grad().select(4, 4).abs().sum().item<double>(), 0.0);
  EXPECT_EQ(c.p[0].grad().slice(4, 0, 4).abs().sum().item<double>(), 0.0);
}

TEST(YoloLoss, SingleClassHasNoClassLoss) {
  auto c = load_case("loss_nc3.json");
  c.config.nc = 1;
  for (auto& pi : c.p) pi = pi.detach().slice(4, 0, 6).contiguous().requires_grad_(true);
  auto targets = c.targets.clone();
  targets.select(1, 1).zero_();
  const auto [loss, items] = YoloLoss(c.config)(c.p, targets);
  EXPECT_EQ(items[2].item<double>(), 0.0);
  EXPECT_GT(items[0].item<double>(), 0.0);
  loss.backward();
  EXPECT_EQ(c.p[0].grad().select(4, 5).abs().sum().item<double>(), 0.0);
}

TEST(YoloLoss, FocalLossModulatesObjectness) {
  // Without targets every objectness target is 0, so focal BCE = BCE * (1-alpha) * sigmoid(x)^gamma.
  auto c = load_case("loss_nc3.json");
  c.config.fl_gamma = 1.5;
  LossBreakdown breakdown;
  YoloLoss(c.config)(c.p, torch::zeros({0, 6}), &breakdown);
  for (size_t i = 0; i < c.p.size(); ++i) {
    const auto x = c.p[i].detach().select(4, 4);
    const auto bce = torch::binary_cross_entropy_with_logits(x, torch::zeros_like(x), {}, {},
                                                             at::Reduction::None);
    const double expected = (bce * 0.75 * torch::sigmoid(x).pow(1.5)).mean().item<double>();
    expect_rel(breakdown.obj_bce_mean[i].item<double>(), expected, 1e-5, "focal obj");
  }
}

}  // namespace
}  // namespace kestrel
