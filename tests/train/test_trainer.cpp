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

}  // namespace
}  // namespace kestrel
