// EarlyStopping: YOLOv5 v7.0 semantics (ties count as improvement, patience 0 never stops).
#include <gtest/gtest.h>

#include "train/early_stopping.h"

namespace kestrel {
namespace {

TEST(EarlyStopping, StopsAfterPatienceEpochsWithoutImprovement) {
  EarlyStopping stopper(3);
  EXPECT_FALSE(stopper(0, 0.10));
  EXPECT_FALSE(stopper(1, 0.20));
  EXPECT_FALSE(stopper(2, 0.15));  // delta 1
  EXPECT_FALSE(stopper.possible_stop());
  EXPECT_FALSE(stopper(3, 0.19));  // delta 2 = patience - 1
  EXPECT_TRUE(stopper.possible_stop());
  EXPECT_TRUE(stopper(4, 0.05));  // delta 3
  EXPECT_EQ(stopper.best_epoch(), 1);
  EXPECT_DOUBLE_EQ(stopper.best_fitness(), 0.20);
}

TEST(EarlyStopping, EqualFitnessMovesBestEpoch) {
  EarlyStopping stopper(2);
  for (int e = 0; e < 10; ++e) EXPECT_FALSE(stopper(e, 0.0)) << e;  // all-zero start never stops
  EXPECT_EQ(stopper.best_epoch(), 9);
}

TEST(EarlyStopping, ZeroPatienceNeverStops) {
  EarlyStopping stopper(0);
  EXPECT_FALSE(stopper(0, 0.5));
  for (int e = 1; e < 1000; ++e) EXPECT_FALSE(stopper(e, 0.1));
  EXPECT_FALSE(stopper.possible_stop());
}

}  // namespace
}  // namespace kestrel
