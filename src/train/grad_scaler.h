// The optimizer step with its guards: dynamic loss scaling with torch.cuda.amp.GradScaler's
// semantics for fp16 (scale 2^16; x0.5 and the step skipped when a gradient is inf/NaN; x2 after
// 2000 clean steps in a row; gradients unscaled before the clip at norm 10), and for every mode a
// step that is never taken on non-finite gradients, so NaN never reaches the weights.
#pragma once
#include <torch/torch.h>

#include <vector>

namespace kestrel {

struct LossScaleState {
  double scale = 65536.0;  // 2^16
  int growth_tracker = 0;  // clean steps since the scale last changed
};

class GradScaler {
 public:
  static constexpr double kGrowthFactor = 2.0, kBackoffFactor = 0.5;
  static constexpr int kGrowthInterval = 2000;

  // enabled: fp16 (scaling). Disabled: loss unscaled, the step still skipped on non-finite gradients.
  explicit GradScaler(bool enabled = false) : enabled_(enabled) {}

  // The loss backward() is called on: loss * scale when enabled.
  torch::Tensor scale(const torch::Tensor& loss) const;

  // Unscales the gradients, and unless one is inf/NaN clips them at max_norm and steps the optimizer;
  // then updates the scale. Returns whether the step was taken. Gradients are left for the caller
  // to zero either way.
  bool step(torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& params, double max_norm);

  // The scale's rule alone: back off on inf/NaN, grow after kGrowthInterval clean steps.
  void update(bool found_inf);

  bool enabled() const { return enabled_; }
  const LossScaleState& state() const { return state_; }
  void restore(const LossScaleState& s) { state_ = s; }

 private:
  bool enabled_;
  LossScaleState state_;
};

}  // namespace kestrel
