// The batch levers: YOLOv5's nominal batch (accumulation, weight decay) and --lr-scale past it.
#include <gtest/gtest.h>

#include <cmath>

#include "train/batch_plan.h"

namespace kestrel {
namespace {

TEST(BatchPlan, NominalBatchAsYolov5) {
  const Hyp hyp;  // lr0 0.01, weight_decay 0.0005
  const BatchPlan p = make_batch_plan(hyp, 16, 64, LrScale::none);
  EXPECT_EQ(p.accumulate, 4);
  EXPECT_EQ(p.effective, 64);
  EXPECT_EQ(p.lr0, 0.01);
  EXPECT_DOUBLE_EQ(p.weight_decay, 0.0005);
  EXPECT_EQ(p.line(), "batch 16, accumulate 4 -> effective batch 64 (nominal 64); lr0 0.01, weight_decay 0.0005");
  // --nbs 256 simulates a batch of 256 on 16 images a step; decay grows with it as train.py scales it.
  const BatchPlan big = make_batch_plan(hyp, 16, 256, LrScale::linear);
  EXPECT_EQ(big.accumulate, 16);
  EXPECT_EQ(big.effective, 256);
  EXPECT_EQ(big.lr0, 0.01);  // effective == nominal: nothing to scale
  // batch 24: round(64/24) = 3 -> 72 images a step, decay x 72/64.
  const BatchPlan odd = make_batch_plan(hyp, 24, 64, LrScale::none);
  EXPECT_EQ(odd.effective, 72);
  EXPECT_DOUBLE_EQ(odd.weight_decay, 0.0005 * 72 / 64);
}

TEST(BatchPlan, LrScalesOnlyPastTheNominalBatch) {
  const Hyp hyp;
  EXPECT_EQ(make_batch_plan(hyp, 256, 64, LrScale::none).lr0, 0.01);
  EXPECT_DOUBLE_EQ(make_batch_plan(hyp, 256, 64, LrScale::linear).lr0, 0.04);
  EXPECT_DOUBLE_EQ(make_batch_plan(hyp, 256, 64, LrScale::sqrt).lr0, 0.02);
  EXPECT_DOUBLE_EQ(make_batch_plan(hyp, 100, 64, LrScale::sqrt).lr_factor, std::sqrt(100.0 / 64));
  EXPECT_EQ(make_batch_plan(hyp, 8, 64, LrScale::linear).lr0, 0.01);  // below nominal: accumulation covers it
  EXPECT_NE(make_batch_plan(hyp, 256, 64, LrScale::linear).line().find("lr0 0.04 (x4.000)"), std::string::npos);
}

TEST(BatchPlan, RejectsWhatCannotBe) {
  EXPECT_THROW(make_batch_plan(Hyp{}, 0, 64, LrScale::none), std::invalid_argument);
  EXPECT_THROW(make_batch_plan(Hyp{}, 16, 0, LrScale::none), std::invalid_argument);
  EXPECT_THROW(parse_lr_scale("quadratic"), std::invalid_argument);
  EXPECT_EQ(parse_lr_scale("sqrt"), LrScale::sqrt);
}

}  // namespace
}  // namespace kestrel
