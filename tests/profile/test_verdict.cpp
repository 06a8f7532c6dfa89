// Verdict decision table on constructed inputs (the end-to-end verdict tests run real trainings).
#include <gtest/gtest.h>

#include "profile/verdict.h"

using namespace kestrel;

namespace {
VerdictInput input(double wait_share, double machine_cpu, double loader_cpu, int workers) {
  VerdictInput in;
  in.steps.seconds[static_cast<size_t>(StepStage::data_wait)] = wait_share;
  in.steps.seconds[static_cast<size_t>(StepStage::forward)] = 1 - wait_share;
  in.steps.steps = 1;
  in.system.samples = 1;
  in.system.machine_cpu = machine_cpu;
  in.system.loader_cpu = loader_cpu;
  in.loader_workers = workers;
  in.largest_loader_stage = "decode";
  return in;
}
}  // namespace

TEST(Verdict, SmallDataWaitIsComputeBound) { EXPECT_EQ(judge(input(0.01, 1.0, 0.2, 2)).bound, Bound::compute); }

TEST(Verdict, WaitingWithBusyLoaderIsDataBoundAndNamesTheStage) {
  const Verdict v = judge(input(0.4, 0.95, 1.8, 2));
  EXPECT_EQ(v.bound, Bound::data);
  EXPECT_NE(v.summary.find("decode"), std::string::npos);
  EXPECT_NE(v.summary.find("40%"), std::string::npos);
}

TEST(Verdict, CpuRunWhoseLoaderDecodesOnTheModelsCoresIsToldToCache) {
  VerdictInput in = input(0.02, 1.0, 0.3, 2);
  in.system.process_cpu = 1.9;  // 16% of it in the loader threads
  Verdict v = judge(in);
  EXPECT_EQ(v.bound, Bound::compute);
  EXPECT_NE(v.action.find("--cache ram"), std::string::npos) << v.action;
  EXPECT_NE(v.action.find("16%"), std::string::npos) << v.action;
  in.images_cached = true;
  EXPECT_EQ(judge(in).action.find("--cache"), std::string::npos);
  in.images_cached = false;
  in.system.loader_cpu = 0.1;  // 5%: not worth a cache
  EXPECT_EQ(judge(in).action.find("--cache"), std::string::npos);
}

TEST(Verdict, WaitingWithIdleCpusIsIoBound) { EXPECT_EQ(judge(input(0.4, 0.2, 0.1, 2)).bound, Bound::io); }

TEST(Verdict, SwapIsMemoryBound) {
  VerdictInput in = input(0.01, 0.5, 0.5, 2);
  in.system.swap_used_mb_max = 500;
  EXPECT_EQ(judge(in).bound, Bound::memory);
}

TEST(Verdict, GpuRules) {
  VerdictInput in = input(0.3, 0.9, 1.9, 2);
  in.gpu = true;
  in.system.has_gpu = true;
  in.system.gpu_util = 0.95;
  EXPECT_EQ(judge(in).bound, Bound::compute);
  in.system.gpu_util = 0.4;
  EXPECT_EQ(judge(in).bound, Bound::data);
  in.system.gpu_throttled = true;
  EXPECT_EQ(judge(in).bound, Bound::power);
}

// The GPU idles, yet the step hardly waits for data: neither the loader nor the disk is the limit.
TEST(Verdict, IdleGpuWithoutDataWaitIsHostBound) {
  VerdictInput in = input(0.01, 0.3, 0.2, 2);
  in.gpu = true;
  in.system.has_gpu = true;
  in.system.gpu_util = 0.55;
  const Verdict v = judge(in);
  EXPECT_EQ(v.bound, Bound::host);
  EXPECT_NE(v.summary.find("busy 55%"), std::string::npos) << v.summary;
  EXPECT_NE(v.action.find("--batch-size"), std::string::npos);
  in.steps.seconds[static_cast<size_t>(StepStage::data_wait)] = 0.3;  // waiting on data again: not host-bound
  EXPECT_NE(judge(in).bound, Bound::host);
}

namespace kestrel {
namespace {

VerdictInput waiting_on_all_reduce(double comm_share, int processes) {
  VerdictInput in;
  in.steps.seconds[static_cast<size_t>(StepStage::communication)] = comm_share;
  in.steps.seconds[static_cast<size_t>(StepStage::forward)] = 1 - comm_share;
  in.steps.steps = 10;
  in.system.machine_cpu = 0.6;
  in.processes = processes;
  return in;
}

TEST(Verdict, LongAllReduceWaitsAreCommunicationBound) {
  const Verdict v = judge(waiting_on_all_reduce(0.35, 4));
  EXPECT_EQ(v.bound, Bound::communication);
  EXPECT_NE(v.summary.find("35%"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("4 processes"), std::string::npos) << v.summary;
  EXPECT_NE(v.action.find("--nbs"), std::string::npos) << v.action;
}

TEST(Verdict, ShortAllReduceWaitsAreNotTheLimit) {
  EXPECT_NE(judge(waiting_on_all_reduce(0.1, 4)).bound, Bound::communication);
  EXPECT_NE(judge(waiting_on_all_reduce(0.35, 1)).bound, Bound::communication) << "one process exchanges nothing";
}

}  // namespace
}  // namespace kestrel
