// BN-sparsity training: the penalty's gradient is S * sign(gamma) on the prunable BatchNorm scales
// only (scaled like the gradients under fp16; per part of a split convolution), decays when asked, the |gamma| records add up, and
// the epoch's last batches re-estimate the BatchNorm statistics.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <opencv2/imgcodecs.hpp>

#include "model/channel_prune.h"
#include "model/model_config.h"
#include "model/ultralytics_blocks.h"
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
  // Not prunable: the Detect convolutions (no BatchNorm), the other BatchNorms' shifts.
  for (const auto& p : m->named_parameters())
    if (p.key().find("bn.bias") != std::string::npos || p.key().rfind("model.24.", 0) == 0)
      EXPECT_EQ(p.value().grad().abs().sum().item<double>(), 0.0) << p.key();
  EXPECT_DOUBLE_EQ(SparsityTraining(*m, 1e-3, true, 10).strength_at(5), 1e-3 * 0.55);
  EXPECT_DOUBLE_EQ(SparsityTraining(*m, 1e-3, true, 10).strength_at(10), 1e-4);
}

// A split convolution is penalized per listed part: C2PSA's attention half keeps its scale, both
// halves of a C3k2's cv1 are pulled.
TEST(Sparsity, SplitConvolutionsArePenalizedPerPart) {
  DetectionModel m(load_model_config("yolo11n.yaml"), 3);
  for (auto& p : m->parameters()) p.mutable_grad() = torch::zeros_like(p);
  SparsityTraining(*m, 1e-3, /*decay=*/false, 10).add_penalty(0, /*grad_scale=*/1.0);
  const auto& c2psa = dynamic_cast<const C2PSAImpl&>(*m->layer(10));
  const torch::Tensor grad = c2psa.cv1->bn->weight.grad();
  const int64_t a = c2psa.halves()[0];
  EXPECT_TRUE(torch::allclose(grad.narrow(0, 0, a), torch::full({a}, 1e-3)));
  EXPECT_EQ(grad.narrow(0, a, grad.numel() - a).abs().sum().item<double>(), 0.0);
  const torch::Tensor both = dynamic_cast<const C2fImpl&>(*m->layer(2)).cv1->bn->weight.grad();
  EXPECT_TRUE(torch::allclose(both, torch::full_like(both, 1e-3)));
}

// The target is the prune the run's flags describe, whatever its ranking.
class SparsityTarget : public testing::TestWithParam<double> {};

TEST_P(SparsityTarget, PenalizesOnlyTheChannelsThePruneWouldRemove) {
  DetectionModel m(load_model_config("yolov5n.yaml"), 3);
  for (auto& p : m->parameters()) p.mutable_grad() = torch::zeros_like(p);
  const std::vector<PrunableConv> convs = prunable_convs(*m);
  torch::manual_seed(4);
  {
    torch::NoGradGuard no_grad;
    for (const PrunableConv& p : convs) p.conv->bn->weight.uniform_(-1, 1);
  }
  TrainOptions flags;
  flags.sparsity_target = 0.3, flags.sparsity_cost_weight = GetParam(), flags.sparsity_multiple = 16;
  const PruneOptions o = sparsity_target_of(flags);
  EXPECT_EQ(o.ratio, 0.3);
  EXPECT_EQ(o.cost_weight, GetParam());
  EXPECT_EQ(o.multiple, 16);
  SparsityTraining s(*m, 1e-3, /*decay=*/false, 10, o);
  const double share = s.start_epoch();
  s.add_penalty(0, 1.0);
  const PruneResult pruned = prune_channels(*m, o);
  int64_t penalized = 0, all = 0;
  for (size_t i = 0; i < convs.size(); ++i) {
    const torch::Tensor& g = convs[i].conv->bn->weight;
    const torch::Tensor hit = g.grad() != 0;
    ASSERT_TRUE(torch::allclose(g.grad().index({hit}), 1e-3 * torch::sign(g).index({hit}))) << convs[i].name;
    EXPECT_EQ(hit.sum().item<int64_t>(), pruned.cuts[i].before - pruned.cuts[i].after) << convs[i].name;
    // The penalized channels are the group's smallest |gamma| (the largest over its members).
    torch::Tensor group_gamma = torch::zeros_like(g);
    for (const PrunableConv& p : convs)
      if (p.group == convs[i].group) group_gamma = torch::maximum(group_gamma, p.conv->bn->weight.detach().abs());
    if (hit.any().item<bool>() && (~hit).any().item<bool>())
      EXPECT_LT(group_gamma.index({hit}).max().item<double>(), group_gamma.index({~hit}).min().item<double>()) << convs[i].name;
    penalized += hit.sum().item<int64_t>(), all += g.numel();
  }
  EXPECT_GT(penalized, 0);
  EXPECT_DOUBLE_EQ(share, static_cast<double>(penalized) / all);
  EXPECT_EQ(penalized, pruned.channels_before - pruned.channels_after);
}

INSTANTIATE_TEST_SUITE_P(CostWeight, SparsityTarget, testing::Values(0.0, 0.5, 1.0),
                         [](const testing::TestParamInfo<double>& i) { return "Times" + std::to_string(static_cast<int>(i.param * 10)); });

// The closing line counts the target's channels already at ~0, and asks for a longer or stronger run
// while too many are not; a run without a target has no such line.
TEST(Sparsity, ReportsHowFarTheTargetChannelsAreFromZero) {
  DetectionModel m(load_model_config("yolov5n.yaml"), 3);
  const std::vector<PrunableConv> convs = prunable_convs(*m);
  torch::manual_seed(5);
  torch::NoGradGuard no_grad;
  for (const PrunableConv& p : convs) p.conv->bn->weight.uniform_(0.1, 1);
  PruneOptions target;
  target.ratio = 0.3;
  EXPECT_EQ(SparsityTraining(*m, 1e-3, false, 10).target_report(10, 4), "");
  SparsityTraining s(*m, 1e-3, false, 10, target);
  const int64_t removed = prune_channels(*m, target).channels_before - prune_channels(*m, target).channels_after;
  const std::string live = s.target_report(10, 4);
  EXPECT_NE(live.find("BN sparsity: 0 of the " + std::to_string(removed) + " channels `kestrel prune " + prune_flags(target) + "`"),
            std::string::npos) << live;
  EXPECT_NE(live.find("this run had 10 epochs of 4 batches: train more epochs"), std::string::npos) << live;

  const ChannelChoice choice = choose_channels(convs, target);
  for (size_t i = 0; i < convs.size(); ++i) {
    torch::Tensor cut = torch::ones({convs[i].conv->bn->weight.numel()}, torch::kBool);
    cut.index_fill_(0, choice.keep[i], false);
    convs[i].conv->bn->weight.masked_fill_(cut, 0.001);
  }
  const std::string reached = s.target_report(10, 4);
  EXPECT_NE(reached.find(std::to_string(removed) + " of the " + std::to_string(removed) + " channels"), std::string::npos)
      << reached;
  EXPECT_NE(reached.find("(largest 0.001)"), std::string::npos) << reached;
  EXPECT_EQ(reached.find("train more epochs"), std::string::npos) << reached;
}

// Past the warmup (3 epochs of 40 batches), an epoch of 40 SGD steps adds 40 x S x lr / (1 - momentum),
// epoch e running at lr0 x lf(e - 1) (train.py's off-by-one).
TEST(Sparsity, ReachSumsTheStepsOfTheSchedule) {
  DetectionModel m(load_model_config("yolov5n.yaml"), 3);
  const Hyp hyp;
  const TrainSchedule schedule(hyp, /*epochs=*/5, /*batch_size=*/64, /*nb=*/40, /*cos_lr=*/false, /*nbs=*/64);
  SparsityTraining s(*m, 0.02, /*decay=*/false, 5);
  const double last = s.reach(schedule, 5, 40) - s.reach(schedule, 4, 40);
  EXPECT_NEAR(last, 40 * 0.02 * hyp.lr0 * schedule.lf(3) / (1 - hyp.momentum), 1e-9);
  SparsityTraining decaying(*m, 0.02, /*decay=*/true, 5);
  EXPECT_NEAR(decaying.reach(schedule, 5, 40) - decaying.reach(schedule, 4, 40), last * (1 - 0.9 * 4 / 5.0), 1e-9);
  EXPECT_GT(s.reach(schedule, 4, 40), 0);  // warmup steps count too
}

// Before the run: the share of the target's channels beyond the reach, and the --sparsity that would
// cover nine in ten of them when too many are.
TEST(Sparsity, ReachReportNamesTheStrengthNeeded) {
  DetectionModel m(load_model_config("yolov5n.yaml"), 3);
  PruneOptions target;
  target.ratio = 0.3;
  SparsityTraining s(*m, 0.01, false, 10, target);  // fresh BatchNorms: every |gamma| is 1
  const std::string short_run = s.reach_report(0.5);
  EXPECT_NE(short_run.find("by 0.5 at most"), std::string::npos) << short_run;
  EXPECT_NE(short_run.find("100% of the channels the target removes have a larger |gamma|"), std::string::npos) << short_run;
  EXPECT_NE(short_run.find("--sparsity 0.02 at the least"), std::string::npos) << short_run;
  const std::string long_run = s.reach_report(2.0);
  EXPECT_NE(long_run.find("0% of the channels"), std::string::npos) << long_run;
  EXPECT_EQ(long_run.find("--sparsity"), std::string::npos) << long_run;
  EXPECT_EQ(SparsityTraining(*m, 0.01, false, 10).reach_report(0.5), "");  // no target
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

TEST(Sparsity, RecalibratesOnTheEpochsLastBatches) {
  DetectionModel m(load_model_config("yolov5n.yaml"), 3);
  m->eval();  // as the EMA model
  SparsityTraining s(*m, 1e-4, false, 3);
  const int nb = SparsityTraining::kCalibrationBatches + 3, last = nb - 1;
  torch::manual_seed(2);
  std::vector<torch::Tensor> batches;
  for (int i = 0; i < nb; ++i) {
    batches.push_back(torch::randint(0, 256, {2, 3, 64, 64}).div(255));  // images as the loader makes them
    s.keep_batch(batches.back(), i, nb);
  }
  auto* stem = dynamic_cast<ConvImpl*>(m->layer(0).get());
  {
    torch::NoGradGuard no_grad;
    stem->bn->running_mean.fill_(7);  // stale
  }
  EXPECT_EQ(s.recalibrate(*m, Precision::fp32, torch::kCPU), SparsityTraining::kCalibrationBatches);
  torch::NoGradGuard no_grad;
  torch::Tensor expected = torch::zeros({stem->bn->running_mean.size(0)});
  for (int i = nb - SparsityTraining::kCalibrationBatches; i <= last; ++i) expected += stem->conv(batches[i]).mean({0, 2, 3});
  expected /= SparsityTraining::kCalibrationBatches;
  EXPECT_TRUE(torch::allclose(stem->bn->running_mean, expected, 1e-4, 1e-5));
  EXPECT_FALSE(m->is_training());  // left as it was
  EXPECT_EQ(s.recalibrate(*m, Precision::fp32, torch::kCPU), 0);  // the batches went with the first call
  EXPECT_TRUE(torch::allclose(stem->bn->running_mean, expected, 1e-4, 1e-5));
}

}  // namespace
}  // namespace kestrel
