// The step benchmark and --amp: figures are measured (positive, adding up), the model measured is
// left untouched (weights and BatchNorm statistics), and the precision choice follows the flag.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/model_config.h"
#include "train/amp_choice.h"
#include "train/step_bench.h"

namespace kestrel {
namespace {

DetectionModel small_model() { return DetectionModel(load_model_config("yolov5n.yaml"), 3); }

TEST(StepBench, MeasuresEachStageAndLeavesTheModelAlone) {
  DetectionModel model = small_model();
  std::vector<torch::Tensor> before;  // copies: state() shares the model's storage
  for (const auto& [name, t] : model->state()) before.push_back(t.clone());
  StepBenchOptions o;
  o.img_size = 64, o.batch_size = 2, o.warmup = 1, o.steps = 2;
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    o.precision = p;
    const StepTimes t = measure_steps(*model, o);
    EXPECT_GT(t.forward_ms, 0);
    EXPECT_GT(t.backward_ms, 0);
    EXPECT_GT(t.optimizer_ms, 0);
    EXPECT_DOUBLE_EQ(t.step_ms(), t.forward_ms + t.loss_ms + t.backward_ms + t.optimizer_ms);
    EXPECT_EQ(t.communication_ms, 0) << "one process exchanges nothing";
    EXPECT_NEAR(t.images_per_s, 1000.0 * 2 / t.step_ms(), 1e-9);
    EXPECT_GE(t.peak_bytes, 0);
  }
  const auto after = model->state();
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(torch::equal(before[i], after[i].second)) << after[i].first;
  EXPECT_NE(format_step_times("bf16", measure_steps(*model, o)).find("bf16: "), std::string::npos);
}

TEST(StepBench, LeavesTheGlobalRandomStreamAlone) {
  DetectionModel model = small_model();
  StepBenchOptions o;
  o.img_size = 64, o.batch_size = 2, o.warmup = 0, o.steps = 1;
  torch::manual_seed(5);
  const torch::Tensor expected = torch::rand({4});
  torch::manual_seed(5);
  measure_steps(*model, o);
  amp_predictions_agree(*model, Precision::bf16, torch::kCPU, 64);
  EXPECT_TRUE(torch::equal(torch::rand({4}), expected));  // a run's later draws do not depend on --amp auto
}

TEST(AmpChoice, ExplicitFlagsAreTakenAndFp16NeedsCuda) {
  DetectionModel model = small_model();
  StepBenchOptions shape;
  shape.img_size = 64, shape.batch_size = 2;
  EXPECT_EQ(choose_amp("off", *model, shape).precision, Precision::fp32);
  const AmpChoice bf16 = choose_amp("bf16", *model, shape);
  EXPECT_EQ(bf16.precision, Precision::bf16);
  EXPECT_EQ(bf16.why, "--amp bf16: bf16 mixed precision");
  EXPECT_THROW(choose_amp("fp16", *model, shape), std::runtime_error);
}

TEST(AmpChoice, AutoOnACpuMeasuresBothWhenItHasBf16) {
  DetectionModel model = small_model();
  StepBenchOptions shape;
  shape.img_size = 64, shape.batch_size = 2;
  const AmpChoice c = choose_amp("auto", *model, shape);
  if (!cpu_has_bf16()) {
    EXPECT_EQ(c.precision, Precision::fp32);
    EXPECT_NE(c.why.find("no bf16 instructions"), std::string::npos) << c.why;
    return;
  }
  EXPECT_NE(c.why.find("fp32 "), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("bf16 "), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("at batch 2, 64 px, median of 3 alternating steps each"), std::string::npos) << c.why;
  // The figures the run's check compares its own steps with: each precision timed as often, and
  // bf16 chosen only when faster beyond the noise of both.
  EXPECT_EQ(c.fp32_ms.n, kAmpProbeRepeats);
  EXPECT_EQ(c.bf16_ms.n, kAmpProbeRepeats);
  EXPECT_GT(c.fp32_ms.median, 0);
  EXPECT_GT(c.bf16_ms.median, 0);
  const bool bf16_faster = c.bf16_ms.median < c.fp32_ms.median * (1 - comparison_noise(c.fp32_ms, c.bf16_ms, 0.02));
  EXPECT_EQ(c.precision, bf16_faster ? Precision::bf16 : Precision::fp32) << c.why;
  EXPECT_EQ(&c.timed(Precision::bf16), &c.bf16_ms);
}

TEST(AmpChoice, Bf16PredictionsAgreeWithFp32) {
  EXPECT_TRUE(amp_predictions_agree(*small_model(), Precision::bf16, torch::kCPU, 128));
}

}  // namespace
}  // namespace kestrel
