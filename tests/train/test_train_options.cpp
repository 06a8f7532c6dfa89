// TrainOptions <-> JSON: every field survives the round trip that --resume depends on, and a JSON
// from an older Kestrel (fields missing) keeps the defaults for what it lacks.
#include <gtest/gtest.h>

#include "train/train_options.h"

namespace kestrel {
namespace {

TEST(TrainOptions, JsonRoundTripKeepsEveryField) {
  TrainOptions o;
  o.weights = "w.pt", o.cfg = "c.yaml", o.data = "d.yaml", o.hyp = "h.yaml";
  o.epochs = 7, o.batch_size = 3, o.img_size = 96, o.rect = true, o.resume = "r.pt", o.nosave = true;
  o.noval = true, o.noplots = true, o.noautoanchor = true, o.cache = "disk", o.device = "cuda:1", o.multi_scale = true;
  o.single_cls = true, o.optimizer = "AdamW", o.workers = 5, o.prefetch = 9, o.project = "p", o.name = "n";
  o.exist_ok = true, o.cos_lr = true, o.label_smoothing = 0.1, o.patience = 4, o.freeze = {1, 2, 5};
  o.save_period = 2, o.save_minutes = 2.5, o.seed = 11, o.close_mosaic = 3, o.val_period = 2;
  o.progress = false, o.max_steps = 13, o.untimed_steps = 2, o.scan = false, o.resident_batch = true, o.check_auto = false;
  o.nbs = 32, o.lr_scale = "sqrt", o.amp = "bf16", o.sparsity = 1e-4, o.sparsity_decay = true;
  o.sparsity_target = 0.3, o.sparsity_cost_weight = 0.5, o.sparsity_multiple = 16;
  o.sync_bn = true, o.dist_timeout = 60, o.world_size = 4, o.fast = true;
  const nlohmann::json j = o;
  const TrainOptions back = j.get<TrainOptions>();
  EXPECT_EQ(nlohmann::json(back), j);
  EXPECT_EQ(back.freeze, o.freeze);
  EXPECT_EQ(back.save_minutes, 2.5);
  // Each field is its own key: changing any one changes the JSON (none is left out of the list).
  const TrainOptions defaults;
  EXPECT_EQ(j.size(), nlohmann::json(defaults).size());
  for (const auto& [key, value] : j.items()) EXPECT_NE(nlohmann::json(defaults).at(key), value) << key;
}

TEST(TrainOptions, MissingFieldsKeepDefaults) {
  const TrainOptions o = nlohmann::json{{"epochs", 3}}.get<TrainOptions>();
  EXPECT_EQ(o.epochs, 3);
  EXPECT_EQ(o.batch_size, TrainOptions{}.batch_size);
  EXPECT_EQ(o.save_minutes, 0.0);
  EXPECT_EQ(o.nbs, 64);
  // A run recorded before mixed precision existed trained in fp32: its --resume must not measure.
  EXPECT_EQ(o.amp, "off");
  const nlohmann::json recorded = {{"amp", "bf16"}};
  EXPECT_EQ(recorded.get<TrainOptions>().amp, "bf16");
}

}  // namespace
}  // namespace kestrel
