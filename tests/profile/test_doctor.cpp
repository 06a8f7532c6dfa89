// kestrel doctor on this machine (no GPU): it runs, reports the basics, and says there is no GPU.
#include <gtest/gtest.h>

#include "profile/doctor.h"

using namespace kestrel;

TEST(Doctor, RunsWithoutGpuAndSaysSo) {
  TorchFacts t;
  t.version = "1.13.1";
  t.intra_op_threads = 2;
  const auto lines = run_doctor(t, ".");
  const std::string text = format_doctor(lines);
  EXPECT_NE(text.find("CPU cores"), std::string::npos);
  EXPECT_NE(text.find("file system"), std::string::npos);
  bool gpu_line = false;
  for (const auto& l : lines)
    if (l.key == "GPU" || l.key == "GPUs visible") gpu_line = true;
  EXPECT_TRUE(gpu_line) << text;
}

TEST(Doctor, RecognisesLocalFileSystems) {
  bool network = true;
  const std::string fs = filesystem_type("/proc", &network);
  EXPECT_FALSE(fs.empty());
  EXPECT_FALSE(network);
}
