// End-to-end training runs on coco128 (short, by step budget) and the verdict they get: a run made
// data-bound (no cache, full augmentation, one loader thread, a tiny model) must be told so, naming
// its largest loader stage; a run made compute-bound (RAM cache, a larger model) must be told that.
// Also: a run writes YOLOv5's run folder, and the step timeline accounts for the steps it ran.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "model/model_config.h"
#include "test_support.h"
#include "train/trainer.h"

namespace kestrel {
namespace {

TrainOptions short_run(const std::string& data, const std::string& tag) {
  TrainOptions o;
  o.data = data;
  o.weights = "";
  o.img_size = 320;
  o.epochs = 100;  // the step budget ends the run
  o.noval = true;
  o.noplots = true;
  o.progress = false;
  o.project = test::temp_dir(tag);
  return o;
}

TEST(Trainer, TinyModelWithOneUncachedWorkerIsDataBound) {
  KESTREL_REQUIRE_SHARED(data, "data/coco128/coco128.yaml");
  TrainOptions o = short_run(data, "trainer_data_bound");
  o.cfg = o.project + "/micro.yaml";
  std::ofstream(o.cfg) << test::micro_model_yaml(80, 16);
  o.hyp = o.project + "/hyp.yaml";  // the full augmentation set: mosaic, perspective, HSV, flips and mixup
  std::ofstream(o.hyp) << "mixup: 1.0\n";
  o.batch_size = 8;
  o.workers = 1;
  o.cache = "none";
  o.max_steps = 12;
  const TrainResult r = train(o);
  EXPECT_EQ(r.timeline.steps, 12u);
  EXPECT_GT(r.timeline.share(StepStage::data_wait), 0.05);
  // The epoch's first step (which waits for the loader to fill) and the 11 steady ones, apart: each
  // step's own time; the timeline also holds the epoch's end (results.csv).
  EXPECT_GT(r.first_step_seconds, 0);
  EXPECT_GT(r.steady_step_seconds, 0);
  const double steps_s = r.first_step_seconds + 11 * r.steady_step_seconds;
  EXPECT_LE(steps_s, r.timeline.step_seconds() + 1e-9);
  EXPECT_GT(steps_s, 0.9 * r.timeline.step_seconds());
  EXPECT_EQ(r.verdict.bound, Bound::data) << r.verdict.summary;
  // Without a cache the largest stage is one the loader threads time inside (decode, most likely).
  const bool fine_stage = r.verdict.summary.find("; decode is the largest") != std::string::npos ||
                          r.verdict.summary.find("; mosaic/warp is the largest") != std::string::npos ||
                          r.verdict.summary.find("; read is the largest") != std::string::npos ||
                          r.verdict.summary.find("; resize is the largest") != std::string::npos ||
                          r.verdict.summary.find("; colour is the largest") != std::string::npos;
  EXPECT_TRUE(fine_stage) << r.verdict.summary;
  EXPECT_TRUE(std::filesystem::exists(r.save_dir + "/results.csv"));
  EXPECT_TRUE(std::filesystem::exists(r.save_dir + "/report.json"));
}

TEST(Trainer, LargerModelWithRamCacheIsComputeBound) {
  KESTREL_REQUIRE_SHARED(data, "data/coco128/coco128.yaml");
  TrainOptions o = short_run(data, "trainer_compute_bound");
  o.cfg = "yolov5s.yaml";
  o.batch_size = 8;
  o.workers = 2;
  o.cache = "ram";
  o.max_steps = 4;
  const TrainResult r = train(o);
  EXPECT_EQ(r.timeline.steps, 4u);
  EXPECT_EQ(r.verdict.bound, Bound::compute) << r.verdict.summary;
}

// --workers auto and --amp auto are checked by the run's own steps, one line each, and what they
// resolved to is in opt.json (what --resume repeats).
TEST(Trainer, AutoChoicesAreCheckedAndRecorded) {
  KESTREL_REQUIRE_SHARED(data, "data/coco128/coco128.yaml");
  TrainOptions o = short_run(data, "trainer_auto_checks");
  o.cfg = o.project + "/micro.yaml";
  std::ofstream(o.cfg) << test::micro_model_yaml(80, 16);
  o.img_size = 128;
  o.batch_size = 8;
  o.cache = "ram";
  o.workers = -1;
  o.amp = "auto";
  o.max_steps = 14;  // enough for each check: 3 warm-up steps, the epoch's first step, 5 measured
  const TrainResult r = train(o);
  ASSERT_FALSE(r.auto_checks.empty());
  bool workers_checked = false, amp_checked = false;
  for (const std::string& line : r.auto_checks) {
    workers_checked |= line.rfind("--workers auto check: " + std::to_string(r.ran.workers) + " workers data wait", 0) == 0;
    amp_checked |= line.rfind("--amp auto check: ", 0) == 0;
  }
  EXPECT_TRUE(workers_checked) << r.auto_checks.front();
  EXPECT_EQ(amp_checked, cpu_has_bf16()) << "the precision is timed (and checked) only where bf16 runs natively";
  std::ifstream opt(r.save_dir + "/opt.json");
  const nlohmann::json j = nlohmann::json::parse(opt);
  EXPECT_EQ(j.at("workers").get<int>(), r.ran.workers);
  EXPECT_GE(r.ran.workers, 1);
  EXPECT_NE(j.at("amp").get<std::string>(), "auto");
}

}  // namespace
}  // namespace kestrel
