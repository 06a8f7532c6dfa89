// Step timeline: attribution of time to stages, epoch/run accumulation, summary line.
#include <gtest/gtest.h>

#include <thread>

#include "profile/timeline.h"

using namespace kestrel;

TEST(Timeline, AttributesElapsedTimeToTheMarkedStage) {
  StepTimeline tl;
  tl.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  tl.mark(StepStage::data_wait);
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  tl.mark(StepStage::forward);
  tl.end_step();
  const auto& e = tl.epoch();
  EXPECT_GE(e.seconds[static_cast<size_t>(StepStage::data_wait)], 0.019);
  EXPECT_GE(e.seconds[static_cast<size_t>(StepStage::forward)], 0.039);
  EXPECT_LT(e.seconds[static_cast<size_t>(StepStage::data_wait)], e.seconds[static_cast<size_t>(StepStage::forward)]);
  EXPECT_EQ(e.steps, 1u);
  EXPECT_NEAR(e.share(StepStage::data_wait) + e.share(StepStage::forward), 1.0, 1e-9);
}

TEST(Timeline, EpochTotalsJoinTheRunAndReset) {
  StepTimeline tl;
  tl.start();
  tl.mark(StepStage::loss);
  tl.end_step();
  tl.end_step();
  StageTotals done = tl.end_epoch();
  EXPECT_EQ(done.steps, 2u);
  EXPECT_EQ(tl.epoch().steps, 0u);
  EXPECT_EQ(tl.run().steps, 2u);
}

TEST(Timeline, ValidationIsNotPartOfStepTime) {
  StageTotals t;
  t.seconds[static_cast<size_t>(StepStage::forward)] = 3;
  t.seconds[static_cast<size_t>(StepStage::data_wait)] = 1;
  t.seconds[static_cast<size_t>(StepStage::validation)] = 100;
  t.steps = 4;
  EXPECT_DOUBLE_EQ(t.step_seconds(), 4);
  EXPECT_DOUBLE_EQ(t.share(StepStage::data_wait), 0.25);
  const std::string line = format_stage_line(t);
  EXPECT_NE(line.find("data 25.0%"), std::string::npos) << line;
  EXPECT_NE(line.find("(1000 ms/step)"), std::string::npos) << line;
}
