// YOLOv5 v7.0's and Ultralytics' warmup / LambdaLR / accumulate logic (see lr_schedule.h).
#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kestrel {
namespace {

constexpr double kPi = 3.14159265358979323846;

// Python round() / numpy .round(): half to even (the default FE_TONEAREST mode).
double round_half_even(double x) { return std::nearbyint(x); }

// np.interp(x, [0, x1], [y0, y1]) with numpy's exact arithmetic: the end points are returned as
// is, interior points as slope*(x - 0) + y0.
double interp(double x, double x1, double y0, double y1) {
  if (x <= 0) return y0;
  if (x >= x1) return y1;
  const double slope = (y1 - y0) / (x1 - 0.0);
  return slope * (x - 0.0) + y0;
}

}  // namespace

TrainSchedule::TrainSchedule(const Hyp& hyp, int epochs, int batch_size, int nb, bool cos_lr, int nbs, bool ultralytics)
    : hyp_(hyp), epochs_(epochs), batch_size_(batch_size), nb_(nb), nbs_(nbs), cos_lr_(cos_lr), ultralytics_(ultralytics) {
  if (epochs <= 0 || batch_size <= 0 || nb <= 0 || nbs <= 0)
    throw std::invalid_argument("TrainSchedule: epochs, batch size, batches and nbs must be positive");
  accumulate_ = nominal_accumulate(batch_size, nbs);
  weight_decay_ = scaled_weight_decay(hyp.weight_decay, batch_size, nbs);  // before Ultralytics' cap
  if (ultralytics) {
    const double warmup_epochs = std::min(hyp.warmup_epochs, static_cast<double>(std::max(epochs - 1, 0)));
    nw_ = warmup_epochs > 0 ? static_cast<int>(round_half_even(warmup_epochs * nb)) : 0;
    accumulate_ = std::min(accumulate_, nb * epochs);
  } else {
    nw_ = std::max(static_cast<int>(round_half_even(hyp.warmup_epochs * nb)), 100);
  }
}

int TrainSchedule::nominal_accumulate(int batch_size, int nbs) {
  return std::max(static_cast<int>(round_half_even(static_cast<double>(nbs) / batch_size)), 1);
}

double TrainSchedule::scaled_weight_decay(double weight_decay, int batch_size, int nbs) {
  // Python evaluates batch_size * accumulate / nbs first (int product, then true division).
  const int product = batch_size * nominal_accumulate(batch_size, nbs);
  return weight_decay * (static_cast<double>(product) / nbs);
}

int TrainSchedule::warmup_accumulate(int ni, int nw, int batch_size, int nbs) {
  const double a = interp(ni, nw, 1.0, static_cast<double>(nbs) / batch_size);
  return std::max(1, static_cast<int>(round_half_even(a)));
}

double TrainSchedule::lf(double x) const {
  if (cos_lr_) return ((1 - std::cos(x * kPi / epochs_)) / 2) * (hyp_.lrf - 1.0) + 1.0;
  return (1 - x / epochs_) * (1.0 - hyp_.lrf) + hyp_.lrf;
}

TrainSchedule::Step TrainSchedule::values(int epoch, int i) const {
  Step s;
  const long long ni = static_cast<long long>(i) + static_cast<long long>(nb_) * epoch;
  s.warmup = ultralytics_ ? nw_ > 0 && ni <= nw_ : ni <= nw_;
  if (s.warmup) {
    // Warmup aims at initial_lr * lf(epoch) of the current epoch; group 0 (biases) falls from
    // warmup_bias_lr, the others rise from 0.
    s.lr0 = hyp_.lr0, s.lf = lf(epoch);
    const double target = s.lr0 * s.lf;
    s.ni = static_cast<double>(ni), s.nw = nw_;
    s.warmup_start = {hyp_.warmup_bias_lr, 0.0, 0.0};
    for (int g = 0; g < 3; ++g) {
      s.lr[g] = interp(static_cast<double>(ni), nw_, s.warmup_start[g], target);
      s.momentum[g] = interp(static_cast<double>(ni), nw_, hyp_.warmup_momentum, hyp_.momentum);
    }
    s.accumulate = ultralytics_ ? std::max(1, static_cast<int>(round_half_even(interp(static_cast<double>(ni), nw_, 1.0, accumulate_))))
                                : warmup_accumulate(static_cast<int>(ni), nw_, batch_size_, nbs_);
    return s;
  }
  // train.py resets scheduler.last_epoch to start_epoch - 1 after LambdaLR already stepped, so
  // epoch e runs at lr0*lf(e-1). In the epoch where warmup ends, the last warmup assignment
  // (lr0*lf(epoch) at ni == nw) stays in effect until the epoch's scheduler.step().
  // Ultralytics steps its scheduler at an epoch's start: epoch e runs at lr0*lf(e).
  const bool warmup_ended_this_epoch = static_cast<long long>(nb_) * epoch <= nw_;
  s.lr0 = hyp_.lr0, s.lf = lf(ultralytics_ || warmup_ended_this_epoch ? epoch : epoch - 1);
  s.lr.fill(s.lr0 * s.lf);
  s.momentum.fill(hyp_.momentum);  // the value warmup ended on
  s.accumulate = accumulate_;
  return s;
}

double TrainSchedule::Step::scaled_lr(int role, double scale) const {
  if (scale == 1.0) return lr.at(role);
  const double target = lr0 * scale * lf;
  return warmup ? interp(ni, nw, warmup_start.at(role), target) : target;
}

TrainSchedule::Step TrainSchedule::batch(int epoch, int i) {
  Step s = values(epoch, i);
  const long long ni = static_cast<long long>(i) + static_cast<long long>(nb_) * epoch;
  s.optimizer_step = ni - last_opt_step_ >= s.accumulate;
  if (s.optimizer_step) last_opt_step_ = ni;
  return s;
}

std::array<double, 3> TrainSchedule::epoch_end_lr(int epoch) const { return values(epoch, nb_ - 1).lr; }

}  // namespace kestrel
