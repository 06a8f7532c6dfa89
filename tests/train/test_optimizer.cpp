// smart_optimizer parameter groups (schedule.json `param_groups`, built on Conv+BN+Conv-with-bias)
// and the per-group lr/momentum setters.
#include "test_support.h"
#include "train/musgd.h"
#include "train/optimizer.h"

namespace kestrel {
namespace {

namespace nn = torch::nn;

// The generator's tiny net: Conv(no bias) + BatchNorm + Conv(with bias).
struct TinyNetImpl : nn::Module {
  TinyNetImpl() {
    conv1 = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(3, 4, 3).bias(false)));
    bn = register_module("bn", nn::BatchNorm2d(4));
    conv2 = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(4, 2, 1)));
  }
  nn::Conv2d conv1{nullptr};
  nn::BatchNorm2d bn{nullptr};
  nn::Conv2d conv2{nullptr};
};
TORCH_MODULE(TinyNet);

TEST(Optimizer, GroupsMatchYolov5) {
  TinyNet net;
  const double lr0 = 0.01, momentum = 0.937, decay = 0.0005;
  auto opt = smart_optimizer(*net, OptimizerKind::SGD, lr0, momentum, decay);
  const auto& ref = test::reference("schedule.json").at("linear").at("param_groups");
  ASSERT_EQ(opt->param_groups().size(), ref.size());
  for (size_t g = 0; g < ref.size(); ++g) {
    const auto& group = opt->param_groups()[g];
    const auto& o = static_cast<const torch::optim::SGDOptions&>(group.options());
    EXPECT_EQ(group.params().size(), ref[g].at("n_params").get<size_t>()) << "group " << g;
    EXPECT_DOUBLE_EQ(o.weight_decay(), ref[g].at("weight_decay").get<double>()) << "group " << g;
    EXPECT_EQ(o.nesterov(), ref[g].at("nesterov").get<bool>()) << "group " << g;
    EXPECT_DOUBLE_EQ(o.lr(), ref[g].at("initial_lr").get<double>()) << "group " << g;
    EXPECT_DOUBLE_EQ(o.momentum(), momentum);
  }
  // Membership, not just counts.
  const auto& groups = opt->param_groups();
  EXPECT_TRUE(groups[0].params()[0].is_same(net->bn->bias) || groups[0].params()[1].is_same(net->bn->bias));
  EXPECT_TRUE(groups[2].params()[0].is_same(net->bn->weight));
}

TEST(Optimizer, FrozenParametersStayInTheirGroups) {
  TinyNet net;
  for (auto& p : net->conv1->parameters()) p.set_requires_grad(false);
  const auto groups = split_param_groups(*net);
  EXPECT_EQ(groups.biases.size(), 2u);
  EXPECT_EQ(groups.decayed.size(), 2u);
  EXPECT_EQ(groups.norm_weights.size(), 1u);
}

TEST(Optimizer, SharedModuleCountedOnce) {
  struct Shared : nn::Module {
    Shared() {
      bn = register_module("a", nn::BatchNorm2d(2));
      register_module("b", bn);
    }
    nn::BatchNorm2d bn{nullptr};
  };
  Shared m;
  const auto groups = split_param_groups(m);
  EXPECT_EQ(groups.biases.size(), 1u);
  EXPECT_EQ(groups.norm_weights.size(), 1u);
}

TEST(Optimizer, WeightDecayOnlyInDecayedGroup) {
  TinyNet net;
  auto opt = smart_optimizer(*net, OptimizerKind::SGD, 0.1, 0.9, 0.5);
  std::vector<torch::Tensor> before;
  for (auto& group : opt->param_groups())
    for (auto& p : group.params()) {
      p.mutable_grad() = torch::zeros_like(p);
      before.push_back(p.detach().clone());
    }
  opt->step();
  size_t k = 0;
  for (size_t g = 0; g < 3; ++g)
    for (auto& p : opt->param_groups()[g].params()) {
      const bool changed = !torch::equal(p.detach(), before[k++]);
      // zero gradient: only decay moves a weight (and only where the weight is non-zero)
      EXPECT_EQ(changed, g == 1) << "group " << g;
    }
}

TEST(Optimizer, SetLrMomentumPerGroup) {
  TinyNet net;
  auto sgd = smart_optimizer(*net, OptimizerKind::SGD, 0.01, 0.937, 0.0005);
  TrainSchedule::Step step;
  step.lr = {0.1, 0.002, 0.003};
  step.momentum = {0.8, 0.81, 0.82};
  apply_schedule_step(*sgd, step);
  for (int g = 0; g < 3; ++g) {
    const auto& o = static_cast<const torch::optim::SGDOptions&>(sgd->param_groups()[g].options());
    EXPECT_DOUBLE_EQ(o.lr(), step.lr[g]);
    EXPECT_DOUBLE_EQ(o.momentum(), step.momentum[g]);
  }
  EXPECT_EQ(group_lrs(*sgd), std::vector<double>({0.1, 0.002, 0.003}));

  for (const auto kind : {OptimizerKind::Adam, OptimizerKind::AdamW}) {
    auto adam = smart_optimizer(*net, kind, 0.001, 0.937, 0.0005);
    set_group_lr_momentum(*adam, 1, 0.02, 0.5);  // momentum: no such key for Adam in YOLOv5
    const auto& g1 = adam->param_groups()[1].options();
    EXPECT_DOUBLE_EQ(g1.get_lr(), 0.02);
    const auto betas = kind == OptimizerKind::Adam
                           ? static_cast<const torch::optim::AdamOptions&>(g1).betas()
                           : static_cast<const torch::optim::AdamWOptions&>(g1).betas();
    EXPECT_DOUBLE_EQ(std::get<0>(betas), 0.937);
    EXPECT_DOUBLE_EQ(std::get<1>(betas), 0.999);
    const double wd0 = kind == OptimizerKind::Adam
                           ? static_cast<const torch::optim::AdamOptions&>(adam->param_groups()[0].options()).weight_decay()
                           : static_cast<const torch::optim::AdamWOptions&>(adam->param_groups()[0].options()).weight_decay();
    EXPECT_EQ(wd0, 0.0);
  }
}

// MuSGD's eight groups follow the schedule by role: [weights x3, weights, norm x3, norm, biases x3,
// biases, Muon x3, Muon]. In warmup each ramps from its role's start (biases: warmup_bias_lr, unscaled)
// to its own initial lr x lf, as Ultralytics' np.interp does; after warmup, initial lr x lf.
TEST(Optimizer, MuSGDGroupsFollowTheScheduleAtTheirScale) {
  TinyNet net;
  auto opt = smart_optimizer(*net, OptimizerKind::MuSGD, 0.01, 0.9, 0.0005);
  ASSERT_EQ(opt->param_groups().size(), 8u);
  Hyp hyp = ultralytics_hyp();
  hyp.lr0 = 0.01, hyp.warmup_bias_lr = 0.1;
  TrainSchedule schedule(hyp, 10, 16, 20, false, 64, true);  // warmup: 3 epochs of 20 batches
  const TrainSchedule::Step warm = schedule.batch(1, 5);    // ni 25 of 60
  apply_schedule_step(*opt, warm);
  const double lf1 = schedule.lf(1), ni = 25, nw = 60;
  const std::vector<double> lrs = group_lrs(*opt);
  const double bias_x3 = (0.01 * 3 * lf1 - 0.1) / nw * ni + 0.1;  // np.interp(25, [0, 60], [0.1, 0.03 lf(1)])
  EXPECT_DOUBLE_EQ(lrs[4], bias_x3);
  EXPECT_DOUBLE_EQ(lrs[5], warm.lr[0]);
  EXPECT_DOUBLE_EQ(lrs[6], (0.01 * 3 * lf1) / nw * ni);
  EXPECT_DOUBLE_EQ(lrs[7], warm.lr[1]);
  EXPECT_DOUBLE_EQ(lrs[2], (0.01 * 3 * lf1) / nw * ni);
  EXPECT_DOUBLE_EQ(lrs[3], warm.lr[2]);
  for (const auto& group : opt->param_groups())
    EXPECT_DOUBLE_EQ(static_cast<const MuSGDOptions&>(group.options()).momentum(), warm.momentum[1]);
  apply_schedule_step(*opt, schedule.batch(5, 0));
  const std::vector<double> later = group_lrs(*opt);
  for (int g = 0; g < 8; ++g) EXPECT_DOUBLE_EQ(later[g], (g % 2 ? 0.01 : 0.01 * 3) * schedule.lf(5)) << "group " << g;
  // results.csv's lr/pg0..7: MuSGD's groups are already in Ultralytics' order.
  EXPECT_EQ(logged_group_lrs(*opt, true), later);
  auto sgd = smart_optimizer(*net, OptimizerKind::SGD, 0.01, 0.9, 0.0005);
  set_group_lr_momentum(*sgd, 0, 0.1, std::nullopt);
  EXPECT_EQ(logged_group_lrs(*sgd, true), std::vector<double>({0.01, 0.01, 0.1}));
  EXPECT_EQ(logged_group_lrs(*sgd, false), std::vector<double>({0.1, 0.01, 0.01}));
}

// Ultralytics' build_optimizer(name='auto'): AdamW at round(0.002 x 5 / (4 + nc), 6) while the run has
// at most 10,000 iterations of ceil(images / max(batch, nbs)) batches an epoch.
TEST(Optimizer, AutoFollowsEachFamily) {
  const Hyp ultra = ultralytics_hyp();
  OptimizerChoice c = choose_optimizer("auto", true, ultra, 80, 128, 16, 64, 100);  // coco128: 2 x 100 iterations
  EXPECT_EQ(c.kind, OptimizerKind::AdamW);
  EXPECT_DOUBLE_EQ(c.lr0, 0.000119);  // 0.01 / 84 = 0.00011905
  EXPECT_DOUBLE_EQ(c.momentum, 0.9);
  EXPECT_EQ(c.warmup_bias_lr, 0.0);
  EXPECT_NE(c.line.find("AdamW(lr=0.000119, momentum=0.9) for 200 iterations"), std::string::npos) << c.line;
  c = choose_optimizer("auto", true, ultra, 6, 1000, 16, 64, 300);  // DeepPCB: 16 x 300 = 4800
  EXPECT_EQ(c.kind, OptimizerKind::AdamW);
  EXPECT_DOUBLE_EQ(c.lr0, 0.001);
  c = choose_optimizer("auto", true, ultra, 6, 1000, 128, 64, 1251);  // 8 x 1251 = 10008: MuSGD
  EXPECT_EQ(c.kind, OptimizerKind::MuSGD);
  EXPECT_DOUBLE_EQ(c.lr0, 0.01);
  EXPECT_DOUBLE_EQ(c.momentum, 0.9);
  EXPECT_NE(c.line.find("MuSGD(lr=0.01, momentum=0.9) for 10008 iterations"), std::string::npos) << c.line;
  c = choose_optimizer("auto", true, ultra, 6, 1000, 128, 64, 1250);  // exactly 10,000: still AdamW
  EXPECT_EQ(c.kind, OptimizerKind::AdamW);
  // A named optimizer, or any YOLOv5 model, keeps the hyp's values.
  c = choose_optimizer("SGD", true, ultra, 6, 1000, 16, 64, 300);
  EXPECT_TRUE(c.kind == OptimizerKind::SGD && c.lr0 == 0.01 && c.momentum == 0.937 && c.warmup_bias_lr == 0.1);
  c = choose_optimizer("auto", false, Hyp{}, 6, 1000, 16, 64, 300);
  EXPECT_TRUE(c.kind == OptimizerKind::SGD && c.lr0 == 0.01 && c.momentum == 0.937 && c.warmup_bias_lr == 0.1);
  EXPECT_THROW(choose_optimizer("RMSProp", true, ultra, 6, 1000, 16, 64, 300), std::invalid_argument);
}

TEST(Optimizer, ParseKind) {
  EXPECT_EQ(parse_optimizer_kind("SGD"), OptimizerKind::SGD);
  EXPECT_EQ(parse_optimizer_kind("AdamW"), OptimizerKind::AdamW);
  EXPECT_EQ(parse_optimizer_kind("MuSGD"), OptimizerKind::MuSGD);
  EXPECT_THROW(parse_optimizer_kind("RMSProp"), std::invalid_argument);
}

}  // namespace
}  // namespace kestrel
