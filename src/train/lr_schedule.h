// YOLOv5 v7.0 train.py learning-rate recipe: nominal-batch accumulation, weight-decay scaling,
// warmup (lr, momentum and accumulate interpolated over the first nw iterations), the linear or
// one-cycle cosine LambdaLR schedule with train.py's off-by-one, and the optimizer-step decision.
// Ultralytics' trainer (8.4) differs in four places, taken when `ultralytics` is set: its warmup
// lasts round(min(warmup_epochs, epochs - 1) x nb) iterations (no floor of 100; none when 0), its
// accumulation ramps to the nominal accumulate (not nbs / batch) and is capped at the run's batches,
// and epoch e runs at lr0 x lf(e) (its scheduler steps at an epoch's start: no off-by-one).
// Torch-free; the training loop asks it once per batch and applies the result to the optimizer.
#pragma once
#include <array>

#include "core/hyp.h"

namespace kestrel {

class TrainSchedule {
 public:
  // Values for one batch. Groups are smart_optimizer's order [biases, decayed weights, BN weights].
  struct Step {
    std::array<double, 3> lr{};        // lr in effect for this batch, per group
    std::array<double, 3> momentum{};  // SGD momentum per group (Adam/AdamW groups ignore it)
    int accumulate = 1;                // batches whose gradients one optimizer step sums
    bool optimizer_step = false;       // step (and zero grads) after this batch's backward
    bool warmup = false;               // ni <= nw
    // Group `role`'s lr for a param group whose initial lr is `scale` x lr0 (MuSGD's class branch, 3x):
    // (scale x lr0) x lf, or in warmup the ramp from the role's start to that, as Ultralytics ramps
    // each group towards its own initial_lr x lf(epoch).
    double scaled_lr(int role, double scale) const;
    double lr0 = 0, lf = 0;               // lr[role] outside warmup, or warmup's target: lr0 x lf
    double ni = 0, nw = 0;                // warmup's position and length
    std::array<double, 3> warmup_start{};  // where each role's warmup ramp starts
  };

  // epochs: total epochs of the run (the schedule's length); nb: batches per epoch;
  // cos_lr: one_cycle(1, lrf, epochs) instead of the linear ramp; nbs: nominal batch size;
  // ultralytics: its trainer's rules (above).
  TrainSchedule(const Hyp& hyp, int epochs, int batch_size, int nb, bool cos_lr, int nbs = 64, bool ultralytics = false);

  // Call once per batch, in order (i = 0..nb-1 of each epoch). Decides the optimizer step from
  // `ni - last_opt_step >= accumulate` and remembers the step. A schedule constructed for a resumed
  // run starts with last_opt_step = -1, exactly as train.py does on --resume.
  Step batch(int epoch, int i);

  // lr per group at the end of `epoch` (what train.py logs to results.csv as x/lr0..2).
  std::array<double, 3> epoch_end_lr(int epoch) const;

  // The LambdaLR factor lf(x): (1 - x/epochs)(1 - lrf) + lrf, or the cosine one-cycle.
  double lf(double x) const;

  // The iteration of the last optimizer step (-1 before the first): what an exact resume restores
  // (train.py itself restarts it at -1 on --resume, which shifts the accumulation windows).
  long long last_optimizer_step() const { return last_opt_step_; }
  void set_last_optimizer_step(long long ni) { last_opt_step_ = ni; }

  int warmup_iterations() const { return nw_; }       // nw = max(round(warmup_epochs*nb), 100); Ultralytics' above
  int accumulate() const { return accumulate_; }      // outside warmup
  double weight_decay() const { return weight_decay_; }  // hyp.weight_decay scaled (see below)

  // max(round(nbs/batch_size), 1), Python (half-to-even) rounding: bs 128 -> 1.
  static int nominal_accumulate(int batch_size, int nbs = 64);
  // weight_decay * batch_size * nominal_accumulate / nbs, as train.py rescales hyp['weight_decay'].
  static double scaled_weight_decay(double weight_decay, int batch_size, int nbs = 64);
  // max(1, round_half_even(np.interp(ni, [0, nw], [1, nbs/batch_size]))).
  static int warmup_accumulate(int ni, int nw, int batch_size, int nbs = 64);

 private:
  Step values(int epoch, int i) const;  // everything but optimizer_step

  Hyp hyp_;
  int epochs_, batch_size_, nb_, nbs_, nw_, accumulate_;
  bool cos_lr_, ultralytics_;
  double weight_decay_;
  long long last_opt_step_ = -1;
};

}  // namespace kestrel
