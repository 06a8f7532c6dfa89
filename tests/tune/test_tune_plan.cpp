// The tune ladder's rules on constructed settings and timings: lever order and what is skipped,
// the keep/drop rule against the noise, the epoch prediction, the command line, --budget, and the
// report's JSON round trip.
#include <gtest/gtest.h>

#include "tune/tune_plan.h"

namespace kestrel {
namespace {

std::vector<std::string> names(const std::vector<Lever>& levers) {
  std::vector<std::string> out;
  for (const Lever& l : levers) out.push_back(l.name);
  return out;
}

TrainOptions slow_settings() {
  TrainOptions o;
  o.cache = "none";
  o.workers = 1;
  o.prefetch = 2;
  o.amp = "off";
  o.batch_size = 8;
  return o;
}

TEST(TunePlan, SpeedLeversComeInTheReportsOrder) {
  std::vector<std::string> skipped;
  const auto levers = speed_levers(slow_settings(), {.gpu = false, .cpu_bf16 = true}, skipped);
  EXPECT_EQ(names(levers), (std::vector<std::string>{"cache", "workers", "prefetch", "precision", "batch"}));
  EXPECT_EQ(levers[3].setting, "--amp bf16");
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("pinned memory"), std::string::npos);

  std::vector<std::string> gpu_skipped;
  EXPECT_EQ(speed_levers(slow_settings(), {.gpu = true, .cpu_bf16 = false}, gpu_skipped)[3].setting, "--amp fp16");
}

TEST(TunePlan, LeversAlreadyPulledOrMissingAreSkippedWithTheReason) {
  TrainOptions o = slow_settings();
  o.cache = "ram";
  o.workers = -1;
  std::vector<std::string> skipped;
  const auto levers = speed_levers(o, {.gpu = false, .cpu_bf16 = false}, skipped);
  EXPECT_EQ(names(levers), (std::vector<std::string>{"prefetch", "batch"}));
  const std::string all = skipped[0] + "|" + skipped[1] + "|" + skipped[2] + "|" + skipped[3];
  EXPECT_NE(all.find("already --cache ram"), std::string::npos) << all;
  EXPECT_NE(all.find("already --workers auto"), std::string::npos) << all;
  EXPECT_NE(all.find("no bf16 instructions"), std::string::npos) << all;
}

TEST(TunePlan, LeversApplyTheirSettings) {
  std::vector<std::string> skipped;
  TrainOptions o = slow_settings();
  for (const Lever& l : speed_levers(o, {.gpu = false, .cpu_bf16 = true}, skipped)) l.apply(o);
  EXPECT_EQ(o.cache, "auto");
  EXPECT_EQ(o.workers, -1);
  EXPECT_EQ(o.prefetch, 8);
  EXPECT_EQ(o.amp, "bf16");
  EXPECT_EQ(o.batch_size, -1);
}

TEST(TunePlan, AccuracyLeversAreTheNextScaleDownAndThreeQuartersOfTheSize) {
  TrainOptions o;
  o.cfg = "yolov5s.yaml";
  o.weights = "yolov5s.pt";
  o.img_size = 640;
  const auto levers = accuracy_levers(o);
  ASSERT_EQ(names(levers), (std::vector<std::string>{"smaller model", "smaller input"}));
  EXPECT_EQ(levers[0].setting, "--cfg yolov5n.yaml");
  EXPECT_NE(levers[0].cost.find("37.4 -> 28.0"), std::string::npos) << levers[0].cost;
  EXPECT_EQ(levers[1].setting, "--img 480");
  EXPECT_NE(levers[1].cost.find("56%"), std::string::npos) << levers[1].cost;
  TrainOptions smaller = o;
  levers[0].apply(smaller);
  EXPECT_EQ(smaller.cfg, "yolov5n.yaml");
  EXPECT_TRUE(smaller.weights.empty());

  TrainOptions nano;  // nothing smaller than yolov5n; a custom yaml has no known scale
  nano.cfg = "yolov5n.yaml";
  nano.img_size = 64;
  EXPECT_TRUE(accuracy_levers(nano).empty());
}

TEST(TunePlan, KeepsOnlyWhatBeatsTheNoise) {
  const double noise = noise_margin(10.0, 10.5);  // two runs of one configuration: 5 % apart
  EXPECT_DOUBLE_EQ(noise, 0.05);
  EXPECT_TRUE(keeps_lever(9.0, 10.0, noise));    // 10 % faster
  EXPECT_FALSE(keeps_lever(9.7, 10.0, noise));   // 3 %: inside the noise
  EXPECT_FALSE(keeps_lever(10.2, 10.0, noise));  // slower
  EXPECT_DOUBLE_EQ(noise_margin(10.0, 10.0), 0.02);  // never below 2 %
}

TEST(TunePlan, EpochPredictionAddsValidationPerPeriod) {
  EXPECT_DOUBLE_EQ(predicted_epoch_seconds(0, 0.5, 8, 0, 1), 4.0);
  EXPECT_DOUBLE_EQ(predicted_epoch_seconds(0, 0.5, 8, 10, 1), 14.0);
  EXPECT_DOUBLE_EQ(predicted_epoch_seconds(0, 0.5, 8, 10, 5), 6.0);
  EXPECT_DOUBLE_EQ(predicted_epoch_seconds(0.7, 0.5, 8, 10, 5), 6.7);  // the first batch's fill, once an epoch
  EXPECT_DOUBLE_EQ(predicted_epoch_seconds(0, 0.5, 1000.0 / 64, 0, 1), 7.8125);  // a partial last batch, its share
}

TEST(TunePlan, CommandLineHasTheFlagsThatDiffer) {
  TrainOptions o;
  o.data = "d.yaml";
  o.cfg = "yolov5s.yaml";
  o.img_size = 320;
  o.batch_size = 32;
  o.workers = 2;
  o.cache = "ram";
  o.amp = "bf16";
  o.val_period = 5;
  EXPECT_EQ(train_command(o),
            "kestrel train --data d.yaml --cfg yolov5s.yaml --img 320 --batch-size 32 --cache ram --workers 2 --amp bf16 --val-period 5");
  // Every other train flag tune accepts travels into the final command too.
  o = TrainOptions{};
  o.nbs = 16, o.lr_scale = "sqrt", o.optimizer = "AdamW", o.freeze = {0, 1}, o.seed = 3, o.close_mosaic = 10, o.scan = false;
  EXPECT_EQ(train_command(o),
            "kestrel train --img 640 --batch-size 16 --nbs 16 --lr-scale sqrt --optimizer AdamW --freeze 0 1 --seed 3 --close-mosaic 10 "
            "--no-scan");
}

TEST(TunePlan, BudgetTakesSecondsMinutesAndHours) {
  EXPECT_DOUBLE_EQ(parse_budget("600"), 600);
  EXPECT_DOUBLE_EQ(parse_budget("90s"), 90);
  EXPECT_DOUBLE_EQ(parse_budget("10m"), 600);
  EXPECT_DOUBLE_EQ(parse_budget("1.5h"), 5400);
  EXPECT_THROW(parse_budget("soon"), std::invalid_argument);
  EXPECT_THROW(parse_budget("10d"), std::invalid_argument);
  EXPECT_THROW(parse_budget("-5m"), std::invalid_argument);
}

TEST(TunePlan, ReportRoundTripsThroughJson) {
  TuneReport r;
  r.rows.push_back({.step = 0, .lever = "baseline", .setting = "as given", .epoch_s = 20, .data_wait_share = 0.6, .kept = true});
  r.rows.push_back({.step = 1, .lever = "smaller input", .setting = "--img 480", .trades_accuracy = true, .cost = "56% of the pixels",
                    .epoch_s = 11, .speedup = 20.0 / 11, .cpu_percent = 180, .note = "compute-bound"});
  r.skipped = {"pinned memory: no GPU"};
  r.noise = 0.04;
  r.final_command = "kestrel train --img 640 --batch-size 16";
  r.predicted_epoch_s = 12.5;
  r.measured_epoch_s = 13.1;
  r.measured_how = "one real epoch";
  const TuneReport back = nlohmann::json::parse(nlohmann::json(r).dump()).get<TuneReport>();
  EXPECT_EQ(nlohmann::json(back), nlohmann::json(r));
  ASSERT_EQ(back.rows.size(), 2u);
  EXPECT_EQ(back.rows[1].cost, "56% of the pixels");
  EXPECT_TRUE(back.rows[1].trades_accuracy);
  EXPECT_DOUBLE_EQ(back.measured_epoch_s, 13.1);
}

}  // namespace
}  // namespace kestrel
