// Median and relative range of timed repeats, and the noise a comparison must beat.
#include <gtest/gtest.h>

#include "core/sample_stats.h"

namespace kestrel {
namespace {

TEST(SampleStats, MedianIgnoresOneSlowRepeat) {
  const SampleSummary s = summarize_samples({100, 300, 102, 98, 101});
  EXPECT_DOUBLE_EQ(s.median, 101);
  EXPECT_NEAR(s.spread, (300.0 - 98) / 101, 1e-12);
  EXPECT_EQ(s.n, 5);
}

TEST(SampleStats, EvenCountAveragesTheMiddleTwo) {
  const SampleSummary s = summarize_samples({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.spread, 3 / 2.5);
}

TEST(SampleStats, EmptyAndSingle) {
  EXPECT_EQ(summarize_samples({}).n, 0);
  const SampleSummary one = summarize_samples({7});
  EXPECT_DOUBLE_EQ(one.median, 7);
  EXPECT_DOUBLE_EQ(one.spread, 0);
}

TEST(SampleStats, ComparisonNoiseIsHalfTheWiderRangeWithAFloor) {
  SampleSummary a, b;
  a.spread = 0.10, b.spread = 0.04;
  EXPECT_DOUBLE_EQ(comparison_noise(a, b, 0.02), 0.05);
  a.spread = 0.01;
  EXPECT_DOUBLE_EQ(comparison_noise(a, b, 0.03), 0.03);
}

}  // namespace
}  // namespace kestrel
