// Tests for eval/numpy_ops: the numpy 1.24 routines the metrics reproduce.
#include "core/numpy_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace kestrel {
namespace {

TEST(NumpyArgsort, SortsAndPermutes) {
  std::mt19937 gen(7);
  for (size_t n : {0u, 1u, 2u, 15u, 16u, 17u, 100u, 1000u, 5000u}) {
    std::vector<float> v(n);
    for (auto& x : v) x = static_cast<float>(gen() % 50) / 7.0f;  // many ties
    const auto order = numpy::argsort_quick(v);
    ASSERT_EQ(order.size(), n);
    std::vector<int64_t> seen(order);
    std::sort(seen.begin(), seen.end());
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(seen[i], static_cast<int64_t>(i));
    for (size_t i = 1; i < n; ++i) ASSERT_LE(v[order[i - 1]], v[order[i]]) << n;
  }
}

TEST(NumpyArgsort, SmallArraysAreInsertionSortedStably) {
  // Up to 16 elements numpy only runs insertion sort, which keeps ties in input order.
  const std::vector<float> v = {3, 1, 2, 1, 3, NAN, 0, 2};
  EXPECT_EQ(numpy::argsort_quick(v), (std::vector<int64_t>{6, 1, 3, 2, 7, 0, 4, 5}));  // NaN last
}

TEST(NumpyArgsort, SurvivesQuicksortWorstCases) {
  // Organ-pipe input: unbalanced partitions (numpy falls back to heapsort past 2*log2(n) depth).
  std::vector<float> v(3000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i < 1500 ? i : 3000 - i);
  const auto order = numpy::argsort_quick(v);
  for (size_t i = 1; i < v.size(); ++i) ASSERT_LE(v[order[i - 1]], v[order[i]]);
}

TEST(NumpySum, UsesPairwiseOrder) {
  // Sequential summation would lose every 1 against 1e16; numpy's 8 accumulators do not.
  const std::vector<double> a = {1e16, 1, 1, 1, 1, 1, 1, 1, 1};
  const double one = 1.0, big = 1e16;
  const double expected = (((big + one) + (one + one)) + ((one + one) + (one + one))) + one;
  EXPECT_EQ(numpy::sum(a), expected);
  EXPECT_NE(numpy::sum(a), 1e16);
  // Above 128 elements the halves are summed separately.
  std::vector<double> many(300, 0.1);
  EXPECT_EQ(numpy::sum(many), numpy::sum(many.data(), 144) + numpy::sum(many.data() + 144, 156));
}

TEST(NumpyLinspace, EndsExactlyAndStepsByMultiplication) {
  const auto x = numpy::linspace(0, 1, 1000);
  ASSERT_EQ(x.size(), 1000u);
  EXPECT_EQ(x[0], 0.0);
  EXPECT_EQ(x[999], 1.0);
  EXPECT_EQ(x[3], 3.0 * (1.0 / 999.0));
}

TEST(NumpyInterp, EdgesDuplicatesAndSlopes) {
  const std::vector<double> xp = {0.0, 0.5, 0.5, 1.0}, fp = {0.0, 1.0, 3.0, 5.0};
  const auto y = numpy::interp({-1.0, 0.0, 0.25, 0.5, 0.75, 1.0, 2.0}, xp, fp, -7.0, 9.0);
  EXPECT_EQ(y, (std::vector<double>{-7.0, 0.0, 0.5, 3.0, 4.0, 5.0, 9.0}));
}

TEST(NumpyTrapz, IntegratesLinearPieces) {
  const auto x = numpy::linspace(0, 1, 101);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < y.size(); ++i) y[i] = 2 * x[i];
  EXPECT_NEAR(numpy::trapz(y, x), 1.0, 1e-14);
}

}  // namespace
}  // namespace kestrel
