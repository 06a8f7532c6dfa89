// The run's check of --amp auto when the machine changes under it: once the probe has spoken, the
// test takes the cores with busy threads of its own (another job landing on the machine), so the
// run's steps no longer match the probe. The run must say so, time the other precision, keep
// whichever is faster for the rest of the run, and write that choice into opt.json for --resume.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli/journey_support.h"
#include "test_support.h"

namespace kestrel::test {
namespace {

// Threads that spin on every core until stopped.
class CoreHog {
 public:
  void start() {
    for (unsigned i = 0; i < 2 * std::max(1u, std::thread::hardware_concurrency()); ++i)
      threads_.emplace_back([this] {
        volatile double x = 1;
        while (!stop_) x = x * 1.0000001 + 1e-9;
      });
  }
  ~CoreHog() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

TEST(AutoChecks, AmpProbeContradictedByTheRunIsRetriedOnceAndRecorded) {
  const std::string root = temp_dir("auto_checks");
  const std::string data = write_dataset(root + "/data", {.nc = 2, .train_images = 32, .val_images = 4});
  CoreHog hog;
  const CommandResult r = run_kestrel({"profile", "--data", data, "--cfg", "yolov5n.yaml", "--img", "128", "--batch", "8",
                                       "--amp", "auto", "--workers", "1", "--cache", "ram", "--steps", "24", "--no-progress",
                                       "--project", root + "/runs", "--name", "hog", "--exist-ok"},
                                      root, [&](const std::string& line) {
                                        if (line.rfind("--amp auto: ", 0) == 0) hog.start();
                                        return false;
                                      });
  ASSERT_EQ(r.exit_code, 0) << r.output;
  if (r.has("--amp auto: fp32 (this CPU has no bf16 instructions"))
    GTEST_SKIP() << "--amp auto times bf16 against fp32 only on a CPU with bf16 instructions";
  ASSERT_TRUE(r.has("--amp auto: forward+loss+backward at batch 8, 128 px")) << r.output;
  EXPECT_TRUE(r.has(": not as predicted; trying 5 steps of ")) << r.output;
  const bool switched = r.has("switched to fp32 for the rest of the run") || r.has("switched to bf16 for the rest of the run");
  const bool stayed = r.has("stays for the rest of the run");
  ASSERT_TRUE(switched != stayed) << "one decision, once\n" << r.output;
  const std::string chosen = r.output.substr(r.output.find(" -> ", r.output.find("--amp auto: ")) + 4, 4);  // "bf16" or "fp32"
  std::string final_precision = chosen;
  if (switched) final_precision = chosen == "bf16" ? "fp32" : "bf16";
  std::ifstream opt(root + "/runs/hog/opt.json");
  std::stringstream s;
  s << opt.rdbuf();
  const std::string recorded = final_precision == "fp32" ? "\"amp\": \"off\"" : "\"amp\": \"bf16\"";
  EXPECT_NE(s.str().find(recorded), std::string::npos) << s.str() << "\n" << r.output;
}

}  // namespace
}  // namespace kestrel::test
