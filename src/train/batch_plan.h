// The batch levers at the start of a run: the nominal batch (--nbs, YOLOv5's nbs = 64: gradients of
// round(nbs/batch) batches are accumulated before each step and weight decay is scaled to match), and
// --lr-scale: when the effective batch (batch x accumulation) passes the nominal one, lr0 grows
// with it (linear) or with its square root (sqrt); none (YOLOv5's rule) keeps lr0. Torch-free.
#pragma once
#include <string>

#include "core/hyp.h"

namespace kestrel {

enum class LrScale { none, linear, sqrt };

LrScale parse_lr_scale(const std::string& name);  // none | linear | sqrt; throws std::invalid_argument

struct BatchPlan {
  int batch = 16, nbs = 64;
  int accumulate = 4;     // outside warmup
  int effective = 64;     // batch x accumulate
  double lr_factor = 1;   // applied to lr0
  double lr0 = 0.01;      // after --lr-scale
  double weight_decay = 0;  // after nominal-batch scaling
  // "batch 16, accumulate 4 -> effective batch 64 (nominal 64); lr0 0.01, weight_decay 0.0005"
  std::string line() const;
};

BatchPlan make_batch_plan(const Hyp& hyp, int batch, int nbs, LrScale lr_scale);

}  // namespace kestrel
