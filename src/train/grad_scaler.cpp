// Loss scaling and the guarded optimizer step (see grad_scaler.h).
#include "train/grad_scaler.h"

#include <cmath>

namespace kestrel {

namespace {

// Multiplies every gradient by inv_scale in place; true when any is inf or NaN afterwards. One host
// read at the end, so a GPU is synchronised once per step.
bool unscale_and_check(const std::vector<torch::Tensor>& params, double inv_scale) {
  torch::Tensor bad;
  for (const torch::Tensor& p : params) {
    torch::Tensor g = p.grad();
    if (!g.defined()) continue;
    if (inv_scale != 1.0) g.mul_(static_cast<float>(inv_scale));  // GradScaler's float32 reciprocal
    const torch::Tensor b = g.isfinite().all().logical_not();
    bad = bad.defined() ? bad.logical_or(b) : b;
  }
  return bad.defined() && bad.item<bool>();
}

}  // namespace

torch::Tensor GradScaler::scale(const torch::Tensor& loss) const {
  return enabled_ ? loss * static_cast<float>(state_.scale) : loss;
}

bool GradScaler::step(torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& params, double max_norm) {
  bool found_inf = enabled_ && unscale_and_check(params, 1.0 / static_cast<float>(state_.scale));
  if (!found_inf) {
    const double norm = torch::nn::utils::clip_grad_norm_(params, max_norm);
    found_inf = !std::isfinite(norm);
  }
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
