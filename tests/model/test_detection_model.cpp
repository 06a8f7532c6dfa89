// DetectionModel: state-dict layout, strides/anchors, forward and decode shapes and formula,
// YOLOv5's initialisation, fusion, weight transfer and copies.
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "model/detection_model.h"
#include "torch_support.h"

namespace kestrel {
namespace {

const char* const kModels[] = {"n", "s", "m", "l", "x"};

// Test binaries share two cores: with one intra-op thread nothing spin-waits in OpenMP, which
// made these tests ~50x slower under contention.
const bool kSingleThreaded = (torch::set_num_threads(1), true);

// One model per variant for the read-only tests; building x takes a few seconds.
DetectionModel& shared_model(const std::string& v) {
  static std::map<std::string, DetectionModel> cache;
  auto it = cache.find(v);
  if (it == cache.end())
    it = cache.emplace(v, DetectionModel(load_model_config("yolov5" + v + ".yaml"))).first;
  return it->second;
}

DetectionModel fresh_nano(std::optional<int64_t> nc = std::nullopt) {
  return DetectionModel(load_model_config("yolov5n.yaml"), nc);
}

std::string dtype_name(const torch::Tensor& t) {
  return t.scalar_type() == torch::kFloat32 ? "float32"
         : t.scalar_type() == torch::kInt64 ? "int64"
                                            : "other";
}

TEST(DetectionModel, StateDictMatchesReferenceForAllFiveModels) {
  for (const char* v : kModels) {
    SCOPED_TRACE(std::string("yolov5") + v);
    const auto& ref = test::reference(std::string("model_yolov5") + v + ".json");
    DetectionModel& model = shared_model(v);
    const StateDict state = model->state();
    const auto params = model->named_parameters();
    ASSERT_EQ(state.size(), ref["state_dict"].size());
    for (size_t i = 0; i < state.size(); ++i) {
      const auto& r = ref["state_dict"][i];
      const auto& [name, tensor] = state[i];
      ASSERT_EQ(name, r[0].get<std::string>()) << "entry " << i;
      EXPECT_EQ(tensor.sizes().vec(), r[1].get<std::vector<int64_t>>()) << name;
      EXPECT_EQ(dtype_name(tensor), r[2].get<std::string>()) << name;
      EXPECT_EQ(params.contains(name) ? "parameter" : "buffer", r[3].get<std::string>()) << name;
    }
    int64_t total = 0;
    for (const auto& p : model->parameters()) total += p.numel();
    EXPECT_EQ(total, ref["total_params"].get<int64_t>());
  }
}

TEST(DetectionModel, StrideAndAnchorsForAllFiveModels) {
  for (const char* v : kModels) {
    SCOPED_TRACE(std::string("yolov5") + v);
    const auto& ref = test::reference(std::string("model_yolov5") + v + ".json");
    DetectionModel& model = shared_model(v);
    EXPECT_EQ(model->stride(), ref["stride"].get<std::vector<double>>());
    EXPECT_TRUE(torch::equal(model->anchors(), test::json_tensor(ref["anchors_grid_units"])));
    EXPECT_TRUE(torch::equal(model->state().find("model.24.anchors"), model->anchors()));
    EXPECT_EQ(model->nl(), 3);
    EXPECT_EQ(model->na(), 3);
    EXPECT_EQ(model->no(), 85);
    EXPECT_EQ(model->nc(), 80);
    EXPECT_EQ(model->names().size(), 80u);
    EXPECT_EQ(model->names()[7], "7");
  }
}

void expect_level_shapes(const std::vector<torch::Tensor>& raw, int64_t bs, int64_t h, int64_t w) {
  ASSERT_EQ(raw.size(), 3u);
  for (int64_t i = 0, s = 8; i < 3; ++i, s *= 2)
    EXPECT_EQ(raw[i].sizes().vec(), (std::vector<int64_t>{bs, 3, h / s, w / s, 85}));
}

TEST(DetectionModel, ForwardShapesTrainEvalSquareAndNot) {
  DetectionModel& model = shared_model("n");
  torch::NoGradGuard no_grad;
  model->eval();
  const auto raw640 = model->forward(torch::rand({1, 3, 640, 640}));
  expect_level_shapes(raw640, 1, 640, 640);
  EXPECT_EQ(model->decode(raw640).sizes().vec(), (std::vector<int64_t>{1, 25200, 85}));
  const auto raw_rect = model->forward(torch::rand({2, 3, 256, 416}));
  expect_level_shapes(raw_rect, 2, 256, 416);
  EXPECT_EQ(model->decode(raw_rect).sizes().vec(),
            (std::vector<int64_t>{2, 3 * (32 * 52 + 16 * 26 + 8 * 13), 85}));
  model->train();
  expect_level_shapes(model->forward(torch::rand({2, 3, 320, 320})), 2, 320, 320);
  model->eval();
  // channels-last input, then channels-last weights too, give the same numbers
  const torch::Tensor x = torch::rand({1, 3, 320, 320});
  const auto a = model->forward(x);
  const torch::Tensor x_cl = x.contiguous(torch::MemoryFormat::ChannelsLast);
  const auto b = model->forward(x_cl);
  const torch::Tensor weight = model->state().find("model.0.conv.weight");
  model->set_memory_format(torch::MemoryFormat::ChannelsLast);
  EXPECT_TRUE(model->state().find("model.0.conv.weight").is_contiguous(torch::MemoryFormat::ChannelsLast));
  const auto c = model->forward(x_cl);
  model->set_memory_format(torch::MemoryFormat::Contiguous);
  EXPECT_TRUE(model->state().find("model.0.conv.weight").is_contiguous());
  EXPECT_TRUE(torch::equal(model->state().find("model.0.conv.weight"), weight));
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-4, 1e-4));
    EXPECT_TRUE(torch::allclose(a[i], c[i], 1e-4, 1e-4));
    EXPECT_TRUE(c[i].is_contiguous());
  }
}

TEST(DetectionModel, DecodeFollowsYoloFormulaAndRowOrder) {
  DetectionModel& model = shared_model("n");
  torch::manual_seed(3);
  std::vector<torch::Tensor> raw;
  const int64_t h = 96, w = 160;
  for (int64_t s : {8, 16, 32}) raw.push_back(torch::randn({2, 3, h / s, w / s, 85}));
  const torch::Tensor out = model->decode(raw);
  const auto anchors = model->anchors();
  int64_t row = 0;
  for (int64_t l = 0; l < 3; ++l) {
    const double stride = model->stride()[l];
    const int64_t ny = raw[l].size(2), nx = raw[l].size(3);
    for (int64_t a = 0; a < 3; ++a)
      for (int64_t gy = 0; gy < ny; ++gy)
        for (int64_t gx = 0; gx < nx; ++gx, ++row) {
          if ((row % 97) != 0) continue;  // a sample of rows
          const torch::Tensor p = raw[l][1][a][gy][gx].sigmoid();
          const torch::Tensor o = out[1][row];
          const auto sig = [&](int k) { return p[k].item<double>(); };
          EXPECT_NEAR(o[0].item<double>(), (sig(0) * 2 - 0.5 + gx) * stride, 1e-4);
          EXPECT_NEAR(o[1].item<double>(), (sig(1) * 2 - 0.5 + gy) * stride, 1e-4);
          const double aw = anchors[l][a][0].item<double>() * stride;
          const double ah = anchors[l][a][1].item<double>() * stride;
          EXPECT_NEAR(o[2].item<double>(), std::pow(sig(2) * 2, 2) * aw, 1e-3);
          EXPECT_NEAR(o[3].item<double>(), std::pow(sig(3) * 2, 2) * ah, 1e-3);
          EXPECT_TRUE(torch::allclose(o.slice(0, 4), p.slice(0, 4), 0, 1e-6));
        }
  }
  EXPECT_EQ(row, out.size(1));
}

TEST(DetectionModel, InitialisationAsYoloV5) {
  DetectionModel model = fresh_nano();
  const StateDict state = model->state();
  for (const auto& m : model->modules()) {
    if (auto* bn = dynamic_cast<torch::nn::BatchNorm2dImpl*>(m.get())) {
      EXPECT_EQ(bn->options.eps(), 1e-3);
      EXPECT_EQ(bn->options.momentum().value(), 0.03);
      // the stride probe ran once in training mode on zeros, with the default momentum 0.1
      EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
      EXPECT_TRUE(torch::allclose(bn->running_var, torch::full_like(bn->running_var, 0.9)));
      EXPECT_EQ(bn->running_mean.abs().max().item<float>(), 0.0f);
    }
  }
  // Detect bias priors on top of the default uniform(+-1/sqrt(fan_in)) init.
  const DetectImpl& det = *model->detect();
  for (int64_t l = 0; l < 3; ++l) {
    const torch::Tensor b = det.convs[l]->bias.view({3, 85});
    const double bound = 1.0 / std::sqrt(static_cast<double>(det.convs[l]->weight.size(1)));
    const double s = model->stride()[l];
    const double obj = std::log(8.0 / std::pow(640.0 / s, 2));
    const double cls = std::log(0.6 / (80 - 0.99));
    EXPECT_LE((b.select(1, 4) - obj).abs().max().item<double>(), bound + 1e-6);
    EXPECT_LE((b.slice(1, 5) - cls).abs().max().item<double>(), bound + 1e-6);
    EXPECT_LE(b.slice(1, 0, 4).abs().max().item<double>(), bound + 1e-6);
  }
}

// Gives every BatchNorm non-trivial statistics so that fusion has something to fold.
void randomise_batchnorm(DetectionModel& model) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(11);
  for (const auto& m : model->modules()) {
    if (auto* bn = dynamic_cast<torch::nn::BatchNorm2dImpl*>(m.get())) {
      bn->weight.uniform_(0.5, 1.5);
      bn->bias.uniform_(-0.2, 0.2);
      bn->running_mean.uniform_(-0.2, 0.2);
      bn->running_var.uniform_(0.5, 2.0);
    }
  }
}

TEST(DetectionModel, FuseKeepsOutputsAndDropsBatchNorm) {
  DetectionModel model = fresh_nano();
  randomise_batchnorm(model);
  model->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::rand({1, 3, 160, 160});
  const auto before = model->forward(x);
  model->fuse();
  EXPECT_TRUE(model->fused());
  const auto after = model->forward(x);
  for (size_t i = 0; i < before.size(); ++i)
    EXPECT_LT((before[i] - after[i]).abs().max().item<double>(), 1e-4);
  const StateDict state = model->state();
  EXPECT_TRUE(state.find("model.0.conv.bias").defined());
  EXPECT_FALSE(state.find("model.0.bn.weight").defined());
  for (const auto& [name, t] : state) EXPECT_EQ(name.find(".bn."), std::string::npos) << name;
  int64_t total = 0;
  for (const auto& p : model->parameters()) total += p.numel();
  EXPECT_EQ(total, test::reference("model_yolov5n.json")["fused"]["total_params"].get<int64_t>());
}

TEST(DetectionModel, LoadMatchingTransfersNameAndShapeMatches) {
  DetectionModel source = fresh_nano();
  randomise_batchnorm(source);
  DetectionModel target = fresh_nano();
  const std::map<std::string, torch::Tensor> weights = source->state();
  EXPECT_EQ(target->load_matching(weights), weights.size());
  source->eval();
  target->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::rand({1, 3, 64, 64});
  const auto a = source->forward(x), b = target->forward(x);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i]));
  // a 3-class model takes everything but the Detect convolutions (3 levels x weight, bias)
  DetectionModel three = fresh_nano(3);
  EXPECT_EQ(three->load_matching(weights), weights.size() - 6);
  EXPECT_EQ(three->no(), 8);
  std::map<std::string, torch::Tensor> half;
  for (const auto& [k, v] : weights) half[k] = v.to(v.is_floating_point() ? torch::kHalf : v.scalar_type());
  EXPECT_EQ(three->load_matching(half), weights.size() - 6);
}

TEST(DetectionModel, CopyIsIndependentAndLeavesRandomStream) {
  DetectionModel model = fresh_nano();
  randomise_batchnorm(model);
  model->eval();
  torch::manual_seed(5);
  const torch::Tensor expected_draw = torch::rand({4});
  torch::manual_seed(5);
  auto copy = model->copy();
  EXPECT_TRUE(torch::equal(torch::rand({4}), expected_draw));
  EXPECT_FALSE(copy->is_training());
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::rand({1, 3, 64, 64});
  const auto a = model->forward(x), b = copy->forward(x);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i]));
  copy->state().find("model.0.conv.weight").zero_();
  EXPECT_GT(model->state().find("model.0.conv.weight").abs().sum().item<double>(), 0);
  EXPECT_EQ(copy->stride(), model->stride());
  EXPECT_TRUE(torch::equal(copy->anchors(), model->anchors()));
}

TEST(DetectionModel, TrainingForwardBackpropagatesToEveryParameter) {
  DetectionModel model = fresh_nano();
  model->train();
  const auto raw = model->forward(torch::rand({2, 3, 64, 64}));
  torch::Tensor loss = torch::zeros({});
  for (const auto& r : raw) loss = loss + r.sigmoid().mean();
  loss.backward();
  for (const auto& p : model->named_parameters())
    EXPECT_TRUE(p.value().grad().defined()) << p.key();
}

}  // namespace
}  // namespace kestrel
