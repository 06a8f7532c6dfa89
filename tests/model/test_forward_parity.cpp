// Forward parity with YOLOv5 on the official yolov5n.pt: the model built from the checkpoint's own
// yaml, its weights loaded, then the fixed 160x160 input through eval (raw and decoded, unfused
// and fused) and train mode (raw outputs and model.0.bn running statistics) against
// forward_yolov5n*.json.
#include <iostream>

#include "model/detection_model.h"
#include "model/pt_reader.h"
#include "torch_support.h"

namespace kestrel {
namespace {

// Printed so the margins to the tolerances show in the test log.
double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b, const std::string& what) {
  EXPECT_EQ(a.sizes(), b.sizes()) << what;
  const double d = (a - b).abs().max().item<double>();
  std::cout << "  max |diff| " << what << ": " << d << "\n";
  return d;
}

class ForwardParity : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string weights = test::shared_path("weights/yolov5n.pt");
    if (weights.empty()) GTEST_SKIP() << "../shared/weights/yolov5n.pt not present (CI has it)";
    torch::manual_seed(0);
    const PtCheckpoint ckpt = read_pt_checkpoint(weights);
    model_ = DetectionModel(parse_model_config(ckpt.model_yaml, weights + ":yaml"));
    ASSERT_EQ(model_->load_matching(ckpt.state), ckpt.state.size());
    ASSERT_EQ(model_->state().size(), ckpt.state.size());
    model_->set_names(ckpt.names);
    input_ = test::fixed_input(160, 160);
  }

  // Raw outputs against a reference list of per-level tensors.
  static void expect_raw(const std::vector<torch::Tensor>& raw, const nlohmann::json& ref, double tol) {
    ASSERT_EQ(raw.size(), ref.size());
    for (size_t i = 0; i < raw.size(); ++i) {
      EXPECT_LT(max_abs_diff(raw[i], test::json_tensor(ref[i]), "raw level " + std::to_string(i)), tol);
    }
  }
  // Decoded output: xywh within 1e-3 px, objectness and class scores within 1e-5.
  static void expect_decoded(const torch::Tensor& out) {
    const torch::Tensor ref = test::json_tensor(test::reference("forward_yolov5n.json")["inference_output"]);
    ASSERT_EQ(out.sizes(), ref.sizes());
    EXPECT_LT(max_abs_diff(out.slice(2, 0, 4), ref.slice(2, 0, 4), "decoded xywh"), 1e-3);
    EXPECT_LT(max_abs_diff(out.slice(2, 4), ref.slice(2, 4), "decoded obj/cls"), 1e-5);
  }

  DetectionModel model_{nullptr};
  torch::Tensor input_;
};

TEST_F(ForwardParity, InputMatchesFormula) {
  const auto& checks = test::reference("forward_yolov5n.json")["input_checks"];
  EXPECT_NEAR(input_.sum().item<double>(), checks["sum"].get<double>(), 1e-2);
  EXPECT_TRUE(torch::equal(input_.flatten().slice(0, 0, 16), test::json_tensor(checks["first16"])));
}

TEST_F(ForwardParity, CheckpointHeadMatchesReference) {
  const auto& ref = test::reference("forward_yolov5n.json");
  EXPECT_EQ(model_->stride(), ref["stride"].get<std::vector<double>>());
  EXPECT_TRUE(torch::equal(model_->anchors(), test::json_tensor(ref["anchors_grid_units"])));
  EXPECT_EQ(model_->nc(), 80);
}

TEST_F(ForwardParity, EvalUnfusedAndFused) {
  torch::NoGradGuard no_grad;
  model_->eval();
  const auto raw = model_->forward(input_);
  expect_raw(raw, test::reference("forward_yolov5n_raw_eval.json")["raw"], 1e-4);
  const torch::Tensor decoded = model_->decode(raw);
  expect_decoded(decoded);

  model_->fuse();
  const auto fused_raw = model_->forward(input_);
  expect_raw(fused_raw, test::reference("forward_yolov5n_raw_eval.json")["raw"], 1e-4);
  const torch::Tensor fused_decoded = model_->decode(fused_raw);
  expect_decoded(fused_decoded);
  // YOLOv5's own fused-vs-unfused gap is 2.2e-4 px decoded and 1.0e-5 raw; ours is of that order.
  EXPECT_LT(max_abs_diff(fused_decoded, decoded, "fused vs unfused decoded"), 1e-3);
  for (size_t i = 0; i < raw.size(); ++i) {
    EXPECT_LT(max_abs_diff(fused_raw[i], raw[i], "fused vs unfused raw " + std::to_string(i)), 1e-4);
  }
}

TEST_F(ForwardParity, TrainModeRawAndBatchNormStats) {
  const auto& ref = test::reference("forward_yolov5n_raw_train.json");
  const StateDict state = model_->state();
  const int64_t tracked_before = state.find("model.0.bn.num_batches_tracked").item<int64_t>();
  model_->train();
  std::vector<torch::Tensor> raw;
  {
    torch::NoGradGuard no_grad;  // the running-stat update does not depend on autograd
    raw = model_->forward(input_);
  }
  expect_raw(raw, ref["raw"], 1e-4);
  const auto& bn = ref["bn0_after"];
  EXPECT_LT(max_abs_diff(state.find("model.0.bn.running_mean"), test::json_tensor(bn["running_mean"]),
                         "bn0 running_mean"), 1e-5);
  EXPECT_LT(max_abs_diff(state.find("model.0.bn.running_var"), test::json_tensor(bn["running_var"]),
                         "bn0 running_var"), 1e-5);
  EXPECT_EQ(state.find("model.0.bn.num_batches_tracked").item<int64_t>(), tracked_before + 1);
  EXPECT_EQ(tracked_before + 1, bn["num_batches_tracked"].get<int64_t>());
}

}  // namespace
}  // namespace kestrel
