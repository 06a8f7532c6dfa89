// The run's check of an `auto` choice: warm-up skipped, a prediction that holds stands, one that
// fails tries the alternative, and the cheaper of the two is kept, once.
#include <gtest/gtest.h>

#include "profile/auto_check.h"

namespace kestrel {
namespace {

using Action = AutoCheck::Action;

AutoCheckSpec amp_spec(double predicted_ms) {
  AutoCheckSpec s;
  s.flag = "--amp auto";
  s.chosen = "bf16", s.alternative = "fp32";
  s.figure = "forward+loss+backward";
  s.predicted = predicted_ms;
  s.noise = 0.05;
  s.warmup = 2, s.window = 3;
  return s;
}

// Feeds `n` steps of `ms` each (figure and cost alike) and returns the last action.
Action feed(AutoCheck& c, int n, double ms) {
  Action a = Action::none;
  for (int i = 0; i < n; ++i) a = c.add_step(ms, ms);
  return a;
}

TEST(AutoCheck, WarmUpStepsAreNotMeasured) {
  AutoCheck c(amp_spec(1000));
  EXPECT_EQ(feed(c, 2, 5000), Action::none);  // slow first steps: skipped, whatever they cost
  EXPECT_EQ(feed(c, 2, 1010), Action::none);
  EXPECT_EQ(c.add_step(990, 990), Action::stand);
  EXPECT_TRUE(c.finished());
  EXPECT_NE(c.line().find("bf16 forward+loss+backward 1010 ms a step (probe 1000 ms, +1.0%"), std::string::npos) << c.line();
  EXPECT_NE(c.line().find("as predicted, bf16 stays"), std::string::npos);
  EXPECT_EQ(c.add_step(1, 1), Action::none);  // once finished, nothing more happens
}

TEST(AutoCheck, FailedPredictionTriesTheAlternativeAndKeepsTheCheaper) {
  AutoCheck c(amp_spec(1000));
  EXPECT_EQ(feed(c, 5, 1300), Action::try_alternative);  // +30%: beyond the 5% noise
  EXPECT_NE(c.line().find("+30.0%"), std::string::npos) << c.line();
  EXPECT_NE(c.line().find("trying 3 steps of fp32"), std::string::npos) << c.line();
  EXPECT_FALSE(c.finished());
  EXPECT_EQ(feed(c, 2, 9000), Action::none);  // the alternative's warm-up
  EXPECT_EQ(feed(c, 3, 1100), Action::keep_alternative);
  EXPECT_TRUE(c.finished());
  EXPECT_NE(c.line().find("fp32 1100 ms a step against bf16 1300 ms"), std::string::npos) << c.line();
  EXPECT_NE(c.line().find("switched to fp32"), std::string::npos);
}

TEST(AutoCheck, AlternativeNoCheaperBeyondNoiseGoesBack) {
  AutoCheck c(amp_spec(1000));
  feed(c, 5, 700);  // faster than predicted also disagrees (ms are compared both ways)
  EXPECT_EQ(feed(c, 5, 690), Action::back_to_chosen);  // 1.4% less: within the 3% floor
  EXPECT_NE(c.line().find("bf16 stays for the rest of the run"), std::string::npos) << c.line();
}

TEST(AutoCheck, NoisyRunWidensTheTolerance) {
  AutoCheck c(amp_spec(1000));
  feed(c, 2, 0);
  c.add_step(800, 800), c.add_step(1100, 1100);
  // median 1100 (+10%), but the window itself ranges over 1400 - 800 = 55% of it: ±27% noise
  EXPECT_EQ(c.add_step(1400, 1400), Action::stand);
  EXPECT_NE(c.line().find("noise ±"), std::string::npos);
}

TEST(AutoCheck, ShareCountsOnlyAnExcessOfWait) {
  AutoCheckSpec s;
  s.flag = "--workers auto";
  s.chosen = "1 workers", s.alternative = "2 workers";
  s.figure = "data wait";
  s.predicted = 0, s.share = true, s.noise = 0.03;
  s.warmup = 0, s.window = 3;
  AutoCheck within(s);
  EXPECT_EQ(within.add_step(0.01, 500), Action::none);
  within.add_step(0.02, 500);
  EXPECT_EQ(within.add_step(0.0, 500), Action::stand);
  EXPECT_NE(within.line().find("1.0% of each step (predicted 0.0%, +1.0 points, noise 3.0 points)"), std::string::npos)
      << within.line();

  AutoCheck waits(s);
  waits.skip(1);
  EXPECT_EQ(waits.add_step(0.9, 5000), Action::none);  // an epoch's first batch: skipped
  waits.add_step(0.20, 600), waits.add_step(0.25, 650);
  EXPECT_EQ(waits.add_step(0.22, 620), Action::try_alternative);
  waits.add_step(0.0, 480), waits.add_step(0.01, 490);
  EXPECT_EQ(waits.add_step(0.0, 485), Action::keep_alternative);
  EXPECT_NE(waits.line().find("switched to 2 workers"), std::string::npos) << waits.line();
}

TEST(AutoCheck, NothingToTryStandsAndSaysSo) {
  AutoCheckSpec s = amp_spec(1000);
  s.alternative = "";
  AutoCheck c(s);
  EXPECT_EQ(feed(c, 5, 2000), Action::stand);
  EXPECT_NE(c.line().find("no other setting to try"), std::string::npos) << c.line();
}

}  // namespace
}  // namespace kestrel
