// usable_cores() against the affinity mask the test process runs under, and the cgroup v2 cpu.max
// lines it reads.
#include "core/cpu_cores.h"

#include <gtest/gtest.h>
#include <sched.h>

namespace kestrel {

TEST(CpuCores, NeverMoreThanTheAffinityMaskAllows) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_GE(usable_cores(), 1u);
  EXPECT_LE(usable_cores(), static_cast<unsigned>(CPU_COUNT(&set)));
}

TEST(CpuCores, ReadsCgroupV2Quotas) {
  EXPECT_EQ(cores_from_cpu_max("200000 100000"), 2u);
  EXPECT_EQ(cores_from_cpu_max("150000 100000\n"), 2u);  // 1.5 cores: two threads, not one
  EXPECT_EQ(cores_from_cpu_max("50000 100000"), 1u);
  EXPECT_EQ(cores_from_cpu_max("max 100000"), std::nullopt);
  EXPECT_EQ(cores_from_cpu_max(""), std::nullopt);
  EXPECT_EQ(cores_from_cpu_max("garbage"), std::nullopt);
  EXPECT_EQ(cores_from_cpu_max("x 100000"), std::nullopt);
}

}  // namespace kestrel
