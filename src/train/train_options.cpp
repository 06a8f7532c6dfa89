// TrainOptions <-> JSON (for checkpoints and opt.yaml-like records).
#include "train/train_options.h"

namespace kestrel {

#define KESTREL_TRAIN_OPTION_FIELDS(X)                                                                       \
  X(weights) X(cfg) X(data) X(hyp) X(epochs) X(batch_size) X(nbs) X(lr_scale) X(amp) X(img_size) X(rect) X(resume) X(nosave) X(noval) \
  X(noplots) X(noautoanchor) X(cache) X(device) X(multi_scale) X(single_cls) X(optimizer) X(workers) X(prefetch) X(project) \
  X(name) X(exist_ok) X(cos_lr) X(label_smoothing) X(patience) X(freeze) X(save_period) X(save_minutes) X(seed)          \
  X(close_mosaic) X(val_period) X(progress) X(max_steps) X(untimed_steps) X(scan) X(check_auto) X(resident_batch) X(sparsity) X(sparsity_decay) X(sparsity_target) \
  X(sparsity_cost_weight) X(sparsity_multiple) X(sync_bn) X(dist_timeout) X(world_size) X(fast)

void to_json(nlohmann::json& j, const TrainOptions& o) {
#define X(f) j[#f] = o.f;
  KESTREL_TRAIN_OPTION_FIELDS(X)
#undef X
}

void from_json(const nlohmann::json& j, TrainOptions& o) {
#define X(f) \
  if (j.contains(#f)) j.at(#f).get_to(o.f);
  KESTREL_TRAIN_OPTION_FIELDS(X)
#undef X
  if (!j.contains("amp")) o.amp = "off";  // recorded before mixed precision existed: an fp32 run
}

}  // namespace kestrel
