// Where a training run stands between two batches: everything besides tensors that an exact
// --resume needs (the epoch and batch, the schedule's accumulation window, the epoch's running loss
// means, early stopping, the fp16 loss scale, and the latest validation that rows of epochs without one repeat). Saved as
// JSON inside each checkpoint; doubles round-trip exactly.
#pragma once
#include <array>
#include <nlohmann/json.hpp>

#include "train/early_stopping.h"

namespace kestrel {

struct ResumePoint {
  int epoch = 0;                 // the epoch to continue
  int batch = 0;                 // its batches already trained (0: it has not begun)
  long long last_opt_step = -1;  // TrainSchedule's iteration of the last optimizer step
  std::array<double, 3> mloss{};  // running means of box/obj/cls train loss over those batches
  EarlyStopping::State stopper;
  std::array<double, 4> val_metrics{};  // latest validation: P, R, mAP@0.5, mAP@0.5:0.95
  std::array<double, 3> val_loss{};     // and its box/obj/cls loss
  double loss_scale = 65536.0;          // fp16 loss scaler (train/grad_scaler.h): scale and clean steps
  int scale_growth_tracker = 0;
};

void to_json(nlohmann::json& j, const ResumePoint& p);
void from_json(const nlohmann::json& j, ResumePoint& p);

}  // namespace kestrel
