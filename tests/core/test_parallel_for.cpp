// parallel_for: every item exactly once on any thread count, the first error rethrown on the caller
// (never std::terminate from a helper thread), progress reported from the calling thread.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/parallel_for.h"

namespace kestrel {
namespace {

TEST(ParallelFor, EveryItemOnceOnAnyThreadCount) {
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    std::vector<std::atomic<int>> hits(1000);
    parallel_for(hits.size(), [&](size_t i) { hits[i].fetch_add(1); }, {threads});
    for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << "item " << i << ", " << threads << " threads";
  }
  parallel_for(0, [](size_t) { FAIL() << "no items, no calls"; });
}

TEST(ParallelFor, AHelperThreadsErrorReachesTheCaller) {
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<size_t> calls{0};
  try {
    parallel_for(10000, [&](size_t i) {
      calls.fetch_add(1);
      if (i >= 10 && std::this_thread::get_id() != caller) throw std::runtime_error("item failed");
      if (i >= 5000) throw std::runtime_error("item failed");  // should the caller take every item
    }, {4});
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "item failed");
  }
  EXPECT_LT(calls.load(), 10000u);  // the first failure stops further claims
}

TEST(ParallelFor, ProgressComesFromTheCallerAndEndsAtN) {
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<size_t> reports;
  ParallelOptions o;
  o.threads = 2;
  o.progress = [&](size_t done, size_t n) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_EQ(n, 50u);
    reports.push_back(done);
  };
  parallel_for(50, [](size_t) { std::this_thread::sleep_for(std::chrono::milliseconds(5)); }, o);
  ASSERT_FALSE(reports.empty());
  EXPECT_EQ(reports.back(), 50u);
  for (size_t k = 1; k < reports.size(); ++k) EXPECT_LE(reports[k - 1], reports[k]);
}

}  // namespace
}  // namespace kestrel
