// AutoBatch's choice from a measured curve, and when the probe stops.
#include <gtest/gtest.h>

#include "train/auto_batch.h"

namespace kestrel {
namespace {

constexpr double GB = 1e9;

TEST(AutoBatch, PicksTheSmallestBatchAboutAsFastAsTheBest) {
  const std::vector<BatchProbe> curve = {{2, 10, 1 * GB}, {4, 14, 2 * GB}, {8, 16, 4 * GB}, {16, 17, 8 * GB}};
  EXPECT_EQ(pick_batch(curve, 100 * GB), 16);  // 16 is 6% faster than 8
  const std::vector<BatchProbe> flat = {{2, 10, 1 * GB}, {4, 16.5, 2 * GB}, {8, 17, 4 * GB}, {16, 17.2, 8 * GB}};
  EXPECT_EQ(pick_batch(flat, 100 * GB), 4);  // within 5% of 17.2
  EXPECT_EQ(pick_batch(curve, 5 * GB), 8);  // 16 would not fit
  EXPECT_EQ(pick_batch(curve, 0.5 * GB), 2);  // nothing fits: the smallest
  const std::vector<BatchProbe> knee = {{2, 10, 1 * GB}, {4, 15, 2 * GB}, {8, 13, 4 * GB}};
  EXPECT_EQ(pick_batch(knee, 100 * GB), 4);
  EXPECT_THROW(pick_batch({}, GB), std::invalid_argument);
}

TEST(AutoBatch, ProbeStopsAtMemorySlowdownOrDataset) {
  EXPECT_TRUE(probe_next_batch({}, GB, 128));
  EXPECT_TRUE(probe_next_batch({{2, 10, 1 * GB}, {4, 14, 2 * GB}}, 10 * GB, 128));
  // The next batch (8) would need about 2 + 2*2 = 4 GB... past 3.5.
  EXPECT_FALSE(probe_next_batch({{2, 10, 1 * GB}, {4, 14, 2 * GB}}, 3.5 * GB, 128));
  // Past the training set's size.
  EXPECT_FALSE(probe_next_batch({{2, 10, 1 * GB}, {4, 14, 2 * GB}}, 10 * GB, 7));
  // Slower twice in a row than the best.
  EXPECT_TRUE(probe_next_batch({{2, 10, 1}, {4, 14, 2}, {8, 13, 3}}, 10 * GB, 128));
  EXPECT_FALSE(probe_next_batch({{2, 10, 1}, {4, 14, 2}, {8, 13, 3}, {16, 12, 4}}, 10 * GB, 128));
}

}  // namespace
}  // namespace kestrel
