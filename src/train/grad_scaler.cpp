// Loss scaling and the guarded optimizer step (see grad_scaler.h).
#include "train/grad_scaler.h"

#include <cmath>

namespace kestrel {


torch::Tensor GradScaler::scale(const torch::Tensor& loss) const {
  return enabled_ ? loss * static_cast<float>(state_.scale) : loss;
}

bool GradScaler::step(torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& params, double max_norm) {
  if (enabled_) {
    torch::NoGradGuard no_grad;
    const float inv_scale = 1.0f / static_cast<float>(state_.scale);  // GradScaler's float32 reciprocal
    for (const torch::Tensor& p : params)
      if (p.grad().defined()) p.grad().mul_(inv_scale);
  }
  // The clip's total norm is inf/NaN exactly when a gradient is: one pass over the gradients and one
  // host read serve the clip and the check.
  const bool found_inf = !std::isfinite(torch::nn::utils::clip_grad_norm_(params, max_norm));
  if (!found_inf) optimizer.step();
  if (enabled_) update(found_inf);
  return !found_inf;
}

void GradScaler::update(bool found_inf) {
  if (found_inf) {
    state_.scale *= kBackoffFactor;
    state_.growth_tracker = 0;
  } else if (++state_.growth_tracker == kGrowthInterval) {
    state_.scale *= kGrowthFactor;
    state_.growth_tracker = 0;
  }
}

}  // namespace kestrel
