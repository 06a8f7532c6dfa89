// Channel pruning: channels made exactly constant by hand (gamma = 0, beta = 0) are removed without
// changing the network's output; the pruned architecture is consistent (it runs, every layer keeps
// what the channel lists say) and survives a checkpoint round trip and a change of class count. The
// same for Ultralytics' models: C2f/C3k2 halves pruned apart, C2PSA, the DFL head's depthwise steps.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <map>

#include "model/channel_prune.h"
#include "model/checkpoint.h"
#include "model/model_config.h"
#include "model/ultralytics_blocks.h"
#include "model/weights.h"
#include "test_support.h"

namespace kestrel {
namespace {

// A model (yolov5n unless named) with realistic BatchNorm statistics and about dead_share of every
// prunable layer's channels dead (the same ones across a residual group: dead in every member);
// with whole_first_parts, none in the first part of a split output (C2f's a), so the parts differ.
DetectionModel model_with_dead_channels(double dead_share, bool zero_beta = true, const std::string& yaml = "yolov5n.yaml",
                                        bool whole_first_parts = false) {
  torch::manual_seed(3);
  DetectionModel m(load_model_config(yaml), 3);
  torch::NoGradGuard no_grad;
  m->train();
  for (int i = 0; i < 3; ++i) m->forward(torch::rand({2, 3, 64, 64}));  // running statistics away from 0/1
  std::map<size_t, torch::Tensor> dead_of_group;
  for (const PrunableConv& p : prunable_convs(*m)) {
    torch::Tensor g = p.gamma(), b = p.channels(p.conv->bn->bias);
    g.uniform_(0.2, 1.5), b.uniform_(-0.5, 0.5);
    torch::Tensor& dead = dead_of_group[p.group];
    const bool spared = whole_first_parts && p.name.size() > 3 && p.name.compare(p.name.size() - 3, 3, "[0]") == 0;
    if (!dead.defined()) dead = torch::rand({g.numel()}) < (spared ? 0.0 : dead_share);
    g.masked_fill_(dead, 0.0);
    if (zero_beta) b.masked_fill_(dead, 0.0);
  }
  m->eval();
  return m;
}

const LayerCut& cut_named(const PruneResult& r, const std::string& name) {
  for (const LayerCut& c : r.cuts)
    if (c.name == name) return c;
  throw std::runtime_error("no prunable conv " + name);
}

// Saves a pruned model as a 3-class checkpoint in a fresh folder; returns its path.
std::string save_pruned(const DetectionModelImpl& m, const std::string& folder) {
  CheckpointMeta meta;
  meta.model_yaml = m.config().text;
  meta.pruned_shapes = m.config().pruned_shapes;
  meta.nc = 3;
  meta.names = {"a", "b", "c"};
  meta.train_options = nlohmann::json::object();
  const std::string path = test::temp_dir(folder) + "/pruned.pt";
  save_checkpoint(path, meta, m, nullptr, nullptr);
  return path;
}

int64_t parameter_count(const DetectionModelImpl& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

TEST(ChannelPrune, PrunableConvsRespectResiduals) {
  DetectionModel m(load_model_config("yolov5n.yaml"), 80);
  const std::vector<PrunableConv> convs = prunable_convs(*m);
  std::map<std::string, size_t> group;
  for (const PrunableConv& p : convs) group[p.name] = p.group;
  EXPECT_EQ(group.size(), convs.size());
  EXPECT_EQ(group.count("model.0"), 1u);
  EXPECT_EQ(group.count("model.9.cv1"), 1u);  // SPPF
  // The residual adds tie a backbone C3's cv1 to every bottleneck's cv2...
  EXPECT_EQ(group.at("model.4.cv1"), group.at("model.4.m.0.cv2"));
  EXPECT_EQ(group.at("model.4.cv1"), group.at("model.4.m.1.cv2"));
  // ...and nothing else: the bottlenecks' cv1, the C3's second branch and its output stand alone.
  std::map<size_t, int> members;
  for (const PrunableConv& p : convs) ++members[p.group];
  for (const char* alone : {"model.0", "model.4.m.0.cv1", "model.4.cv2", "model.4.cv3", "model.13.cv1", "model.13.m.0.cv2"})
    EXPECT_EQ(members[group.at(alone)], 1) << alone;  // head C3s have no shortcut
  EXPECT_EQ(members[group.at("model.6.cv1")], 4);     // cv1 and three bottlenecks
  // A channel's cost: (input channels x kernel area + kElementwiseCost) / stride^2, the stride
  // followed through the strided Convs, the Upsamples and the Concats.
  std::map<std::string, double> cost;
  for (const PrunableConv& p : convs) cost[p.name] = p.channel_cost;
  EXPECT_DOUBLE_EQ(cost.at("model.0"), (3 * 36 + kElementwiseCost) / 4);         // 6x6, stride 2
  EXPECT_DOUBLE_EQ(cost.at("model.2.m.0.cv2"), (16 * 9 + kElementwiseCost) / 16);  // inside a C3 at stride 4
  EXPECT_DOUBLE_EQ(cost.at("model.9.cv2"), (512 + kElementwiseCost) / 1024);      // SPPF's 4 x 128 at stride 32
  EXPECT_DOUBLE_EQ(cost.at("model.13.cv1"), (256 + kElementwiseCost) / 256);      // upsampled to 16, concat of 2 x 128
  EXPECT_DOUBLE_EQ(cost.at("model.17.cv3"), (64 + kElementwiseCost) / 64);        // back at stride 8
  EXPECT_DOUBLE_EQ(cost.at("model.18"), (64 * 9 + kElementwiseCost) / 256);        // a stride-2 3x3 down to 16
  m->fuse();
  EXPECT_THROW(prunable_convs(*m), std::runtime_error);
}

TEST(ChannelPrune, DeadChannelsGoWithoutChangingTheOutput) {
  DetectionModel m = model_with_dead_channels(0.4);
  PruneOptions o;
  o.ratio = 0.3;
  const PruneResult r = prune_channels(*m, o);
  EXPECT_EQ(r.threshold, 0.0);  // 30% of the channels are below the dead ones' |gamma| = 0
  EXPECT_LT(r.channels_after, r.channels_before);
  EXPECT_LT(parameter_count(*r.model), parameter_count(*m));
  torch::NoGradGuard no_grad;
  r.model->eval();
  const torch::Tensor x = torch::rand({2, 3, 96, 128});
  const torch::Tensor a = m->decode(m->forward(x)), b = r.model->decode(r.model->forward(x));
  ASSERT_EQ(a.sizes(), b.sizes());
  EXPECT_TRUE(torch::allclose(a, b, 1e-4, 1e-3)) << (a - b).abs().max().item<double>();
}

TEST(ChannelPrune, RatioZeroKeepsEveryChannel) {
  DetectionModel m = model_with_dead_channels(0.4);
  PruneOptions o;
  o.ratio = 0, o.min_channels = 1, o.multiple = 1;
  const PruneResult r = prune_channels(*m, o);
  EXPECT_EQ(r.channels_after, r.channels_before);  // even the dead ones (|gamma| = 0) stay
  EXPECT_EQ(parameter_count(*r.model), parameter_count(*m));
}

// Dead channels with beta != 0 carry the constant act(beta): folded into the consumers, the output
// is unchanged away from the borders (where zero padding makes a kxk consumer see less of it).
TEST(ChannelPrune, ConstantChannelsAreFoldedIntoConsumers) {
  DetectionModel m = model_with_dead_channels(0.4, /*zero_beta=*/false);
  PruneOptions o;
  o.ratio = 0.3;
  const PruneResult r = prune_channels(*m, o);
  // A residual group lost channels: their constants sum through the adds.
  EXPECT_LT(cut_named(r, "model.6.cv1").after, cut_named(r, "model.6.cv1").before);
  EXPECT_EQ(cut_named(r, "model.6.m.2.cv2").after, cut_named(r, "model.6.cv1").after);
  torch::NoGradGuard no_grad;
  r.model->eval();
  const torch::Tensor x = torch::rand({1, 3, 256, 256});
  const torch::Tensor a = m->forward(x)[0], b = r.model->forward(x)[0];  // stride 8: 32 x 32 cells
  const torch::Tensor ai = a.slice(2, 12, 20).slice(3, 12, 20), bi = b.slice(2, 12, 20).slice(3, 12, 20);
  // Tight: the outputs of a random network move little (a residual group's constants left unsummed
  // moved them by 2e-4; folded right they differ by 5e-7).
  EXPECT_TRUE(torch::allclose(ai, bi, 1e-4, 1e-5)) << (ai - bi).abs().max().item<double>();
}

// A layer whose |gamma| are all the smallest loses only its allowed share; the ratio is still met,
// from the smallest |gamma| of the other layers.
TEST(ChannelPrune, NoLayerLosesMoreThanItsShareAndTheRatioIsMet) {
  DetectionModel m(load_model_config("yolov5n.yaml"), 3);
  const std::vector<PrunableConv> convs = prunable_convs(*m);
  torch::manual_seed(5);
  int64_t all = 0;
  {
    torch::NoGradGuard no_grad;
    for (const PrunableConv& p : convs) {
      p.conv->bn->weight.uniform_(0.5, 1.5), all += p.conv->bn->weight.numel();
      if (p.name == "model.4.cv2") p.conv->bn->weight.uniform_(0.001, 0.01);
    }
  }
  PruneOptions o;
  o.ratio = 0.3, o.min_channels = 1, o.multiple = 1, o.max_layer_cut = 0.5;
  const PruneResult r = prune_channels(*m, o);
  EXPECT_EQ(cut_named(r, "model.4.cv2").after, cut_named(r, "model.4.cv2").before / 2);
  // The ratio is met; a residual group's channel goes from all its members at once (up to 4 here).
  const auto target = static_cast<int64_t>(0.3 * static_cast<double>(all));
  EXPECT_GE(r.channels_before - r.channels_after, target);
  EXPECT_LT(r.channels_before - r.channels_after, target + 4);
  for (const LayerCut& c : r.cuts) EXPECT_GE(c.after, (c.before + 1) / 2) << c.name;
  EXPECT_GT(r.threshold, 0.5);  // the cut went on past the small layer
}

// The threshold is the largest |gamma| that goes: a cut that the rounding to --multiple gives back
// removed nothing (the 16-wide stem keeps its 16 however small its |gamma|).
TEST(ChannelPrune, ThresholdCountsOnlyTheChannelsThatGo) {
  DetectionModel m(load_model_config("yolov5n.yaml"), 3);
  const std::vector<PrunableConv> convs = prunable_convs(*m);
  int64_t all = 0;
  {
    torch::NoGradGuard no_grad;
    for (const PrunableConv& p : convs) p.conv->bn->weight.fill_(1.0), all += p.conv->bn->weight.numel();
    convs[0].conv->bn->weight.copy_(torch::linspace(0.001, 0.016, 16));
  }
  PruneOptions o;
  o.ratio = 8.5 / static_cast<double>(all), o.multiple = 16;  // 8 channels
  const PruneResult r = prune_channels(*m, o);
  EXPECT_EQ(r.channels_after, r.channels_before);
  EXPECT_EQ(r.threshold, -1.0);
  o.multiple = 4;
  const PruneResult cut = prune_channels(*m, o);
  EXPECT_EQ(cut_named(cut, "model.0").after, 8);
  EXPECT_NEAR(cut.threshold, 0.008, 1e-6);  // the eighth smallest
}

// With |gamma| nearly equal, a prune by cost takes the costliest channels: no group keeps a channel it
// could lose while a cheaper one loses any. By |gamma| alone the same prune takes the smallest.
TEST(ChannelPrune, CostWeightOneTakesTheCostliestChannelsFirst) {
  DetectionModel m(load_model_config("yolov5n.yaml"), 3);
  const std::vector<PrunableConv> convs = prunable_convs(*m);
  {
    torch::NoGradGuard no_grad;
    for (const PrunableConv& p : convs) p.conv->bn->weight.fill_(p.name == "model.23.cv3" ? 0.9 : 1.0);
  }
  PruneOptions o;
  o.ratio = 0.1, o.min_channels = 1, o.multiple = 1, o.max_layer_cut = 0.5, o.cost_weight = 1;
  const PruneResult r = prune_channels(*m, o);
  std::map<size_t, double> group_cost;
  for (const PrunableConv& p : convs) group_cost[p.group] += p.channel_cost;
  double cheapest_cut = 1e30, costliest_whole = 0;
  for (size_t i = 0; i < convs.size(); ++i) {
    const double c = group_cost[convs[i].group];
    if (r.cuts[i].after < r.cuts[i].before) cheapest_cut = std::min(cheapest_cut, c);
    if (r.cuts[i].after == r.cuts[i].before) costliest_whole = std::max(costliest_whole, c);
  }
  EXPECT_GE(cheapest_cut, costliest_whole);  // equal where the cut stopped among groups of one cost
  EXPECT_EQ(cut_named(r, "model.0").after, 8);         // the stem: 77 per channel, the costliest
  EXPECT_EQ(cut_named(r, "model.23.cv3").after, 256);  // stride 32: 0.45 per channel
  o.cost_weight = 0;
  EXPECT_EQ(cut_named(prune_channels(*m, o), "model.23.cv3").after, 128);  // its |gamma| are the smallest
}

TEST(ChannelPrune, ChannelListsHoldAndRoundUp) {
  DetectionModel m = model_with_dead_channels(0.5);
  PruneOptions o;
  o.ratio = 0.5, o.min_channels = 8, o.multiple = 8;
  const PruneResult r = prune_channels(*m, o);
  const std::vector<PrunableConv> after = prunable_convs(*r.model);
  ASSERT_EQ(after.size(), r.cuts.size());
  for (size_t i = 0; i < after.size(); ++i) {
    const LayerCut& c = r.cuts[i];
    EXPECT_EQ(after[i].name, c.name);
    EXPECT_EQ(after[i].conv->bn->weight.numel(), c.after) << c.name;
    EXPECT_EQ(after[i].conv->conv->weight.size(0), c.after) << c.name;
    EXPECT_TRUE(c.after == c.before || (c.after % 8 == 0 && c.after >= 8)) << c.name << " " << c.after;
  }
  // The same architecture built from the recorded shapes alone has the same parameters.
  ModelConfig cfg = r.model->config();
  EXPECT_FALSE(cfg.pruned_shapes.empty());
  DetectionModel rebuilt(cfg, 3);
  EXPECT_EQ(parameter_count(*rebuilt), parameter_count(*r.model));
}

TEST(ChannelPrune, PrunedCheckpointLoadsAndFineTunesOnOtherClasses) {
  DetectionModel m = model_with_dead_channels(0.4);
  PruneResult r = prune_channels(*m, PruneOptions{});
  const std::string path = save_pruned(*r.model, "prune_ckpt");

  BuiltModel same = build_model("", path, 0);
  EXPECT_EQ(same.transferred, same.total);
  torch::NoGradGuard no_grad;
  same.model->eval(), r.model->eval();
  const torch::Tensor x = torch::rand({1, 3, 64, 64});
  EXPECT_TRUE(torch::allclose(same.model->forward(x)[0], r.model->forward(x)[0]));
  // Fine-tuning on 5 classes: the Detect outputs change, the pruned inputs stay.
  BuiltModel five = build_model("", path, 5);
  EXPECT_EQ(five.model->nc(), 5);
  EXPECT_EQ(five.total - five.transferred, 6u);  // the Detect convolutions' weights and biases
  EXPECT_EQ(five.model->forward(x)[0].size(-1), 10);
  EXPECT_LT(parameter_count(*five.model), parameter_count(*DetectionModel(load_model_config("yolov5n.yaml"), 5)));
}

// YOLO11's prune groups: a C3k2's cv1 is pruned per half, the second half chained to its
// bottlenecks' adds (alone before a C3k block, whose own cv1 chains its bottlenecks); C2PSA's
// attention stream and the head's depthwise steps are not listed.
TEST(ChannelPrune, UltralyticsGroupsFollowSplitsChainsAndDepthwiseSteps) {
  DetectionModel m(load_model_config("yolo11n.yaml"), 80);
  const std::vector<PrunableConv> convs = prunable_convs(*m);
  std::map<std::string, const PrunableConv*> by_name;
  std::map<size_t, int> members;
  for (const PrunableConv& p : convs) by_name[p.name] = &p, ++members[p.group];
  ASSERT_EQ(by_name.size(), convs.size());
  const PrunableConv &a = *by_name.at("model.2.cv1[0]"), &b = *by_name.at("model.2.cv1[1]");
  EXPECT_EQ(a.conv, b.conv);
  EXPECT_EQ(a.first, 0);
  EXPECT_EQ(b.first, a.count);
  EXPECT_EQ(a.count + b.count, a.conv->conv->weight.size(0));
  EXPECT_EQ(members[a.group], 1);
  EXPECT_EQ(b.group, by_name.at("model.2.m.0.cv2")->group);  // a Bottleneck block adds its input
  EXPECT_EQ(members[b.group], 2);
  EXPECT_EQ(members[by_name.at("model.6.cv1[1]")->group], 1);  // feeds a C3k block
  EXPECT_EQ(by_name.at("model.6.m.0.cv1")->group, by_name.at("model.6.m.0.m.0.cv2")->group);
  EXPECT_EQ(members[by_name.at("model.6.m.0.cv3")->group], 1);
  for (const char* name : {"model.10.cv1[0]", "model.10.m.0.ffn.0", "model.10.cv2", "model.23.cv2.0.0", "model.23.cv2.2.1",
                           "model.23.cv3.1.0.1", "model.23.cv3.1.1.1"})
    EXPECT_EQ(by_name.count(name), 1u) << name;
  for (const char* name : {"model.10.cv1[1]", "model.10.m.0.attn.qkv", "model.10.m.0.attn.proj", "model.10.m.0.ffn.1",
                           "model.23.cv3.1.0.0", "model.23.cv3.1.1.0"})
    EXPECT_EQ(by_name.count(name), 0u) << name;
  // A head convolution costs at its level's stride: 3x3 over layer 19's 128 channels at stride 16.
  EXPECT_DOUBLE_EQ(by_name.at("model.23.cv2.1.0")->channel_cost, (128 * 9 + kElementwiseCost) / 256);
}

class UltralyticsPrune : public ::testing::TestWithParam<const char*> {};

// Only dead channels go (gamma = beta = 0; a first part of a split keeps all, so the halves part
// ways): the outputs stay, and the pruned architecture round-trips a checkpoint and takes 5 classes.
TEST_P(UltralyticsPrune, DeadChannelsGoAndThePrunedModelRebuilds) {
  DetectionModel m = model_with_dead_channels(0.4, /*zero_beta=*/true, GetParam(), /*whole_first_parts=*/true);
  PruneOptions o;
  o.ratio = 0.3;
  PruneResult r = prune_channels(*m, o);
  EXPECT_EQ(r.threshold, 0.0);
  EXPECT_LT(parameter_count(*r.model), parameter_count(*m));
  int c2f_layers = 0, uneven = 0;
  for (size_t i = 0; i < r.model->num_layers(); ++i)
    if (const auto* c2f = dynamic_cast<const C2fImpl*>(r.model->layer(i).get()))
      ++c2f_layers, uneven += c2f->halves()[0] != c2f->halves()[1];
  EXPECT_EQ(uneven > 0, c2f_layers > 0);
  torch::NoGradGuard no_grad;
  r.model->eval();
  const torch::Tensor x = torch::rand({2, 3, 96, 128});
  const std::vector<torch::Tensor> a = m->forward(x), b = r.model->forward(x);
  // Logits up to about 8 differ by an ulp or two (1e-6); YOLO11's depthwise steps given no constant moved them by 7e-5.
  for (size_t level = 0; level < a.size(); ++level) EXPECT_LT((a[level] - b[level]).abs().max().item<double>(), 4e-6) << level;

  const std::string path = save_pruned(*r.model, "prune_ckpt_ultralytics");
  BuiltModel same = build_model("", path, 0);
  EXPECT_EQ(same.transferred, same.total);
  same.model->eval();
  EXPECT_TRUE(torch::allclose(same.model->forward(x)[0], b[0]));
  BuiltModel five = build_model("", path, 5);
  EXPECT_EQ(five.total - five.transferred, 6u);  // the class outputs' weights and biases
  EXPECT_EQ(five.model->forward(x)[0].size(1), 4 * 16 + 5);
}

INSTANTIATE_TEST_SUITE_P(Models, UltralyticsPrune, ::testing::Values("yolov8n.yaml", "yolo11n.yaml", "yolov5nu.yaml"));

// Dead channels with beta != 0 through YOLOv8's C2f chains (their adds sum the constants) and the
// head: folded into the consumers, the output is unchanged away from the borders.
TEST(ChannelPrune, Yolov8ConstantChannelsAreFoldedThroughTheChains) {
  DetectionModel m = model_with_dead_channels(0.4, /*zero_beta=*/false, "yolov8n.yaml", /*whole_first_parts=*/true);
  PruneOptions o;
  o.ratio = 0.3;
  const PruneResult r = prune_channels(*m, o);
  EXPECT_LT(cut_named(r, "model.6.cv1[1]").after, cut_named(r, "model.6.cv1[1]").before);  // a chain of 2 bottlenecks
  torch::NoGradGuard no_grad;
  r.model->eval();
  const torch::Tensor x = torch::rand({1, 3, 256, 256});
  const torch::Tensor a = m->forward(x)[0], b = r.model->forward(x)[0];  // stride 8: 32 x 32 cells
  const torch::Tensor ai = a.slice(2, 12, 20).slice(3, 12, 20), bi = b.slice(2, 12, 20).slice(3, 12, 20);
  // Logits up to 8.4 differ by 1e-6 (an ulp); the chains' constants left unsummed moved them by 1.3e-5.
  EXPECT_LT((ai - bi).abs().max().item<double>(), 4e-6);
}

TEST(ChannelPrune, RecalibrationAveragesTheBatchesStatistics) {
  DetectionModel m(load_model_config("yolov5n.yaml"), 3);
  torch::manual_seed(1);
  const std::vector<torch::Tensor> batches = {torch::rand({2, 3, 64, 64}), torch::rand({2, 3, 64, 64}) * 0.5};
  size_t next = 0;
  recalibrate_batchnorm(*m, [&] { return next < batches.size() ? batches[next++] : torch::Tensor(); }, 5);
  EXPECT_EQ(next, batches.size());  // stopped when the data ran out
  // The stem's BatchNorm mean: the average over both batches of its convolution's per-channel mean.
  auto* stem = dynamic_cast<ConvImpl*>(m->layer(0).get());
  torch::NoGradGuard no_grad;
  const torch::Tensor expected = (stem->conv(batches[0]).mean({0, 2, 3}) + stem->conv(batches[1]).mean({0, 2, 3})) / 2;
  EXPECT_TRUE(torch::allclose(stem->bn->running_mean, expected, 1e-4, 1e-5));
  EXPECT_EQ(stem->bn->options.momentum().value(), 0.03);
}

}  // namespace
}  // namespace kestrel
