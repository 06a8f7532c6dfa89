// YOLOv8, YOLO11 and YOLOv5u as Ultralytics builds them (tests/testdata/reference/ultralytics,
// written by its make_vectors.py from the pinned ultralytics): every built-in scale's parse_model
// rows, summary counts and GFLOPs; then yolov8n, yolo11n and yolov5nu with every weight set by the
// generator's formula, forward in eval mode (raw head maps, decoded boxes and scores, unfused and
// fused) and in training mode (raw maps, BatchNorm running statistics).
#include <cmath>
#include <iostream>

#include "model/detection_model.h"
#include "model/model_info.h"
#include "torch_support.h"

namespace kestrel {
namespace {

const nlohmann::json& vectors(const std::string& name) { return test::reference("ultralytics/" + name); }

// make_vectors.py's fill_value(): element i of the t-th tensor in sorted-name order.
double fill_value(const std::string& name, const torch::Tensor& t, int64_t t_index, uint64_t i) {
  const double u = static_cast<double>((i * 2654435761ULL + static_cast<uint64_t>(t_index + 1) * 97531ULL) & 0xFFFFFFFFULL) / 4294967296.0;
  const auto ends_with = [&](const std::string& tail) {
    return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  if (ends_with("running_var")) return 0.5 + u;
  if (ends_with("bn.weight")) return 1.0 + 2.0 * u;
  if (t.dim() == 4) return (u - 0.5) * 2.0 * std::sqrt(6.0 / static_cast<double>(t.numel() / t.size(0)));
  return (u - 0.5) * 0.2;
}

// Sets every tensor the generator sets; returns how many.
size_t fill(DetectionModelImpl& model) {
  torch::NoGradGuard no_grad;
  std::map<std::string, torch::Tensor> sorted;
  for (const auto& [name, t] : model.state())
    if (name.find("num_batches_tracked") == std::string::npos && name.find("dfl.conv.weight") == std::string::npos) sorted[name] = t;
  int64_t t_index = 0;
  for (auto& [name, t] : sorted) {
    std::vector<double> values(static_cast<size_t>(t.numel()));
    for (size_t i = 0; i < values.size(); ++i) values[i] = fill_value(name, t, t_index, i);
    t.copy_(torch::tensor(values, torch::kFloat64).view(t.sizes()).to(t.scalar_type()));
    ++t_index;
  }
  return sorted.size();
}

// max |a - b| / max(1, max |b|), printed so the margin to the tolerance shows in the log.
double relative_diff(const torch::Tensor& a, const torch::Tensor& b, const std::string& what) {
  EXPECT_EQ(a.sizes(), b.sizes()) << what;
  if (a.sizes() != b.sizes()) return INFINITY;
  const double d = (a - b).abs().max().item<double>() / std::max(1.0, b.abs().max().item<double>());
  std::cout << "  relative max |diff| " << what << ": " << d << "\n";
  return d;
}

TEST(UltralyticsModels, EveryScaleMatchesParseModelAndModelInfo) {
  for (const auto& [name, ref] : vectors("models.json")["models"].items()) {
    SCOPED_TRACE(name);
    DetectionModel model(load_model_config(name));
    const ModelSummary s = model_summary(*model);
    EXPECT_EQ(s.layers, ref["layers"].get<int64_t>());
    EXPECT_EQ(s.parameters, ref["parameters"].get<int64_t>());
    EXPECT_EQ(s.gradients, ref["gradients"].get<int64_t>());
    EXPECT_NEAR(s.gflops, ref["gflops"].get<double>(), 1e-6 * ref["gflops"].get<double>());
    EXPECT_EQ(model->stride(), ref["stride"].get<std::vector<double>>());
    const auto& rows = ref["rows"];
    const auto& layers = model->spec().layers;
    const std::vector<int64_t> params = layer_params(*model);
    ASSERT_EQ(layers.size(), rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      const LayerSpec& L = layers[i];
      const std::string from = L.from_is_list ? python_repr([&] {
        std::vector<Arg> f;
        for (int64_t v : L.from) f.push_back(Arg::integer(v));
        return f;
      }()) : std::to_string(L.from[0]);
      EXPECT_EQ(from, rows[i]["from"].get<std::string>()) << "layer " << i;
      EXPECT_EQ(L.n, rows[i]["n"].get<int64_t>()) << "layer " << i;
      EXPECT_EQ(params[i], rows[i]["params"].get<int64_t>()) << "layer " << i;
      EXPECT_EQ(L.python_type, rows[i]["module"].get<std::string>()) << "layer " << i;
      EXPECT_EQ(python_repr(L.args), rows[i]["args"].get<std::string>()) << "layer " << i;
    }
    if (name == "yolo11n.yaml")
      EXPECT_EQ(s.line(), "YOLO11n summary: 181 layers, 2,624,080 parameters, 2,624,064 gradients, 6.7 GFLOPs");
  }
}

class UltralyticsForward : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ref_ = &vectors("forward_" + GetParam() + ".json");
    model_ = DetectionModel(load_model_config(GetParam() + ".yaml"), 3);
    ASSERT_EQ(fill(*model_), (*ref_)["filled_tensors"].get<size_t>());
    input_ = test::fixed_input(64, 96);
  }
  // The head's raw maps as Ultralytics lays them out: [1, 4 x reg_max, N] boxes, [1, nc, N] scores.
  static std::pair<torch::Tensor, torch::Tensor> boxes_and_scores(const std::vector<torch::Tensor>& raw) {
    std::vector<torch::Tensor> flat;
    for (const auto& r : raw) flat.push_back(r.reshape({r.size(0), r.size(1), -1}));
    const torch::Tensor all = torch::cat(flat, 2);
    return {all.slice(1, 0, 64), all.slice(1, 64)};
  }

  const nlohmann::json* ref_ = nullptr;
  DetectionModel model_{nullptr};
  torch::Tensor input_;
};

// Kestrel's float32 against Ultralytics' float32 may differ by summation order (thread count,
// kernels) and Conv+BN folding: judged against how far Ultralytics' own float32 is from its float64
// on the same input (fp32_error), which DFL's softmax over large logits and the fill's gains make
// reach 1e-3 of the largest value in places.
double tolerance(const nlohmann::json& ref, const std::string& key) {
  return std::max(1e-4, 4.0 * ref["fp32_error"][key].get<double>());
}

TEST_P(UltralyticsForward, EvalUnfusedAndFused) {
  torch::NoGradGuard no_grad;
  model_->eval();
  const auto& eval = (*ref_)["eval"];
  for (const bool fused : {false, true}) {
    SCOPED_TRACE(fused ? "fused" : "unfused");
    if (fused) model_->fuse();
    const auto raw = model_->forward(input_);
    const auto [boxes, scores] = boxes_and_scores(raw);
    EXPECT_LT(relative_diff(boxes, test::json_tensor(eval["boxes"]), "raw box bins"), tolerance(*ref_, "eval_boxes"));
    EXPECT_LT(relative_diff(scores, test::json_tensor(eval["scores"]), "raw class logits"), tolerance(*ref_, "eval_scores"));
    const torch::Tensor decoded = model_->decode(raw).transpose(1, 2);  // Ultralytics: [1, 4 + nc, N]
    const torch::Tensor expected = test::json_tensor(eval["decoded"]);
    EXPECT_LT(relative_diff(decoded.slice(1, 0, 4), expected.slice(1, 0, 4), "decoded xywh"), tolerance(*ref_, "eval_decoded_xywh"));
    EXPECT_LT(relative_diff(decoded.slice(1, 4), expected.slice(1, 4), "decoded scores"), tolerance(*ref_, "eval_decoded_scores"));
  }
}

TEST_P(UltralyticsForward, TrainModeRawAndBatchNormStats) {
  torch::NoGradGuard no_grad;
  model_->train();
  const auto& train = (*ref_)["train"];
  const auto [boxes, scores] = boxes_and_scores(model_->forward(input_));
  EXPECT_LT(relative_diff(boxes, test::json_tensor(train["boxes"]), "train box bins"), tolerance(*ref_, "train_boxes"));
  EXPECT_LT(relative_diff(scores, test::json_tensor(train["scores"]), "train class logits"), tolerance(*ref_, "train_scores"));
  const StateDict state = model_->state();
  EXPECT_LT(relative_diff(state.find("model.0.bn.running_mean"), test::json_tensor(train["bn0_running_mean"]), "bn0 mean"), 1e-5);
  EXPECT_LT(relative_diff(state.find("model.0.bn.running_var"), test::json_tensor(train["bn0_running_var"]), "bn0 var"), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Models, UltralyticsForward, ::testing::Values("yolov8n", "yolo11n", "yolov5nu"));

}  // namespace
}  // namespace kestrel
