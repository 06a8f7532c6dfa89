// Nominal batch, accumulation and LR scaling (see batch_plan.h).
#include "train/batch_plan.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "train/lr_schedule.h"

namespace kestrel {

LrScale parse_lr_scale(const std::string& name) {
  if (name == "none") return LrScale::none;
  if (name == "linear") return LrScale::linear;
  if (name == "sqrt") return LrScale::sqrt;
  throw std::invalid_argument("--lr-scale '" + name + "': expected none, linear or sqrt");
}

BatchPlan make_batch_plan(const Hyp& hyp, int batch, int nbs, LrScale lr_scale) {
  if (batch <= 0 || nbs <= 0) throw std::invalid_argument("batch size and --nbs must be positive");
  BatchPlan p;
  p.batch = batch, p.nbs = nbs;
  p.accumulate = TrainSchedule::nominal_accumulate(batch, nbs);
  p.effective = batch * p.accumulate;
  const double ratio = static_cast<double>(p.effective) / nbs;
  if (ratio > 1 && lr_scale == LrScale::linear) p.lr_factor = ratio;
  if (ratio > 1 && lr_scale == LrScale::sqrt) p.lr_factor = std::sqrt(ratio);
  p.lr0 = hyp.lr0 * p.lr_factor;
  p.weight_decay = TrainSchedule::scaled_weight_decay(hyp.weight_decay, batch, nbs);
  return p;
}

std::string BatchPlan::line() const {
  char s[240];
  std::snprintf(s, sizeof s, "batch %d, accumulate %d -> effective batch %d (nominal %d); lr0 %g%s, weight_decay %g", batch,
                accumulate, effective, nbs, lr0, lr_factor != 1 ? (" (x" + std::to_string(lr_factor).substr(0, 5) + ")").c_str() : "",
                weight_decay);
  return s;
}

}  // namespace kestrel
