// TrainSchedule against schedule.json: every batch of the linear and cosine 30-epoch schedules,
// epoch-end lrs, accumulate / weight-decay table and warmup accumulate, and resuming.
#include <cmath>

#include "test_support.h"
#include "train/lr_schedule.h"

namespace kestrel {
namespace {

const nlohmann::json& schedule() { return test::reference("schedule.json"); }

void expect_rel(double got, double want, const std::string& what) {
  EXPECT_NEAR(got, want, 1e-12 * std::abs(want)) << what;
}

TrainSchedule make(bool cos_lr) {
  const auto& s = schedule().at("settings");
  Hyp hyp;  // hyp.scratch-low, as the generator used; check the values it recorded
  EXPECT_EQ(hyp.lr0, s.at("lr0").get<double>());
  EXPECT_EQ(hyp.lrf, s.at("lrf").get<double>());
  EXPECT_EQ(hyp.momentum, s.at("momentum").get<double>());
  EXPECT_EQ(hyp.weight_decay, s.at("weight_decay").get<double>());
  EXPECT_EQ(hyp.warmup_epochs, s.at("warmup_epochs").get<double>());
  EXPECT_EQ(hyp.warmup_momentum, s.at("warmup_momentum").get<double>());
  EXPECT_EQ(hyp.warmup_bias_lr, s.at("warmup_bias_lr").get<double>());
  return TrainSchedule(hyp, s.at("epochs").get<int>(), s.at("batch_size").get<int>(), s.at("nb").get<int>(),
                       cos_lr, s.at("nbs").get<int>());
}

void check_schedule(const char* name, bool cos_lr) {
  const auto& ref = schedule().at(name);
  TrainSchedule sched = make(cos_lr);
  EXPECT_EQ(sched.warmup_iterations(), ref.at("nw").get<int>());
  expect_rel(sched.weight_decay(), ref.at("weight_decay_scaled").get<double>(), "weight_decay_scaled");
  const auto& rows = ref.at("iterations");
  ASSERT_EQ(rows.size(), 240u);
  for (const auto& row : rows) {
    const int epoch = row[0].get<int>(), i = row[1].get<int>();
    const std::string at = std::string(name) + " epoch " + std::to_string(epoch) + " i " + std::to_string(i);
    const TrainSchedule::Step step = sched.batch(epoch, i);
    for (int g = 0; g < 3; ++g) {
      expect_rel(step.lr[g], row[3 + g].get<double>(), at + " lr" + std::to_string(g));
      expect_rel(step.momentum[g], row[6 + g].get<double>(), at + " momentum" + std::to_string(g));
    }
    EXPECT_EQ(step.accumulate, static_cast<int>(row[9].get<double>())) << at;
    EXPECT_EQ(step.optimizer_step, row[10].get<bool>()) << at;
    EXPECT_EQ(step.warmup, row[2].get<int>() <= sched.warmup_iterations()) << at;
  }
  for (const auto& row : ref.at("epoch_end_lr")) {
    const int epoch = row[0].get<int>();
    const auto lr = sched.epoch_end_lr(epoch);
    for (int g = 0; g < 3; ++g)
      expect_rel(lr[g], row[1 + g].get<double>(), std::string(name) + " epoch_end_lr " + std::to_string(epoch));
  }
}

TEST(LrSchedule, LinearMatchesYolov5) { check_schedule("linear", false); }
TEST(LrSchedule, CosineMatchesYolov5) { check_schedule("cosine", true); }

TEST(LrSchedule, AccumulateAndWeightDecayTable) {
  const int nw = schedule().at("linear").at("nw").get<int>();
  for (const auto& row : schedule().at("accumulate_weight_decay_table")) {
    const int bs = row.at("batch_size").get<int>();
    EXPECT_EQ(TrainSchedule::nominal_accumulate(bs), row.at("accumulate").get<int>()) << "bs " << bs;
    expect_rel(TrainSchedule::scaled_weight_decay(0.0005, bs), row.at("weight_decay").get<double>(),
               "weight decay bs " + std::to_string(bs));
    const auto& warm = row.at("warmup_accumulate_ni_0_to_100");
    ASSERT_EQ(warm.size(), 101u);
    for (int ni = 0; ni <= 100; ++ni)
      EXPECT_EQ(TrainSchedule::warmup_accumulate(ni, nw, bs), static_cast<int>(warm[ni].get<double>()))
          << "bs " << bs << " ni " << ni;
  }
}

TEST(LrSchedule, RoundingIsHalfToEven) {
  EXPECT_EQ(TrainSchedule::nominal_accumulate(128), 1);     // round(0.5) == 0 -> max(.,1)
  EXPECT_EQ(TrainSchedule::warmup_accumulate(50, 100, 32), 2);  // interp 1.5 -> 2
  EXPECT_EQ(TrainSchedule::warmup_accumulate(50, 100, 16), 2);  // interp 2.5 -> 2
}

TEST(LrSchedule, WarmupLengthIsAtLeast100AndRounded) {
  Hyp hyp;
  EXPECT_EQ(TrainSchedule(hyp, 10, 16, 8, false).warmup_iterations(), 100);
  EXPECT_EQ(TrainSchedule(hyp, 10, 16, 1000, false).warmup_iterations(), 3000);
  hyp.warmup_epochs = 0.5;
  EXPECT_EQ(TrainSchedule(hyp, 10, 16, 501, false).warmup_iterations(), 250);  // round(250.5) = 250
}

// A run resumed at epoch k (fresh schedule, as train.py rebuilds it) gets the same lr, momentum
// and accumulate; only last_opt_step restarts at -1, so its first batch steps the optimizer.
TEST(LrSchedule, ResumeGivesSameValues) {
  for (const bool cos_lr : {false, true}) {
    const auto& rows = schedule().at(cos_lr ? "cosine" : "linear").at("iterations");
    for (const int start_epoch : {5, 12, 13, 20}) {
      TrainSchedule resumed = make(cos_lr);
      for (const auto& row : rows) {
        const int epoch = row[0].get<int>(), i = row[1].get<int>();
        if (epoch < start_epoch) continue;
        const auto step = resumed.batch(epoch, i);
        for (int g = 0; g < 3; ++g) {
          expect_rel(step.lr[g], row[3 + g].get<double>(), "resumed lr");
          expect_rel(step.momentum[g], row[6 + g].get<double>(), "resumed momentum");
        }
        EXPECT_EQ(step.accumulate, static_cast<int>(row[9].get<double>()));
        if (epoch == start_epoch && i == 0) EXPECT_TRUE(step.optimizer_step);
      }
    }
  }
}

// Ultralytics' trainer, from its own results.csv (ultralytics/schedule_demo.json): a warmup of
// round(3 x 25) = 75 iterations, not YOLOv5's floor of 100, and epoch e at lr0 x lf(e) afterwards.
TEST(LrSchedule, UltralyticsEpochEndLrsMatchItsTrainer) {
  const auto& ref = test::reference("ultralytics/schedule_demo.json");
  const auto& s = ref.at("settings");
  Hyp hyp = ultralytics_hyp();
  hyp.lr0 = s.at("lr0").get<double>();
  hyp.warmup_bias_lr = s.at("warmup_bias_lr").get<double>();
  const int epochs = s.at("epochs").get<int>();
  const TrainSchedule sched(hyp, epochs, s.at("batch_size").get<int>(), s.at("nb").get<int>(), false, s.at("nbs").get<int>(), true);
  EXPECT_EQ(sched.warmup_iterations(), 75);
  const auto& rows = ref.at("lr_pg0_pg1_pg2");
  ASSERT_EQ(rows.size(), static_cast<size_t>(epochs));
  for (int e = 0; e < epochs; ++e) {
    const std::array<double, 3> lr = sched.epoch_end_lr(e);  // Kestrel's groups: biases, decayed, norm
    const std::array<double, 3> as_ultralytics{lr[1], lr[2], lr[0]};
    for (int g = 0; g < 3; ++g) {
      const double want = rows[e][g].get<double>();  // printed with '%.6g'
      EXPECT_NEAR(as_ultralytics[g], want, 5e-6 * want) << "epoch " << e << " group " << g;
    }
  }
}

TEST(LrSchedule, UltralyticsWarmupAndAccumulateRules) {
  const Hyp hyp = ultralytics_hyp();
  EXPECT_EQ(TrainSchedule(hyp, 1, 16, 8, false, 64, true).warmup_iterations(), 0);  // min(3, epochs - 1) = 0
  EXPECT_FALSE(TrainSchedule(hyp, 1, 16, 8, false, 64, true).batch(0, 0).warmup);
  EXPECT_EQ(TrainSchedule(hyp, 2, 16, 8, false, 64, true).warmup_iterations(), 8);  // one epoch of 8
  EXPECT_EQ(TrainSchedule(hyp, 2, 16, 8, false).warmup_iterations(), 100);         // YOLOv5's floor
  // Accumulation capped at the run's batches: 64 / 16 = 4, but 1 batch x 2 epochs.
  EXPECT_EQ(TrainSchedule(hyp, 2, 16, 1, false, 64, true).accumulate(), 2);
  // Warmup's accumulate ramps to the nominal 2 (round(64 / 40)), not to 1.6: halfway 1.5 rounds to 2.
  TrainSchedule ultra(hyp, 10, 40, 40, false, 64, true), v5(hyp, 10, 40, 40, false);
  ASSERT_EQ(ultra.warmup_iterations(), 120);
  EXPECT_EQ(ultra.batch(1, 20).accumulate, 2);  // ni 60
  EXPECT_EQ(v5.batch(1, 20).accumulate, 1);     // YOLOv5: interp to 1.6 gives 1.3
  // After warmup: lr0 x lf(e) against YOLOv5's lr0 x lf(e - 1).
  EXPECT_DOUBLE_EQ(ultra.batch(5, 0).lr[1], hyp.lr0 * ultra.lf(5));
  EXPECT_DOUBLE_EQ(v5.batch(5, 0).lr[1], hyp.lr0 * v5.lf(4));
}

}  // namespace
}  // namespace kestrel
