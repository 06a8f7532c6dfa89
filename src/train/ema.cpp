// YOLOv5 v7.0 ModelEMA (see ema.h).
#include "train/ema.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace kestrel {
namespace {

// All parameters and buffers of a module by state-dict name.
std::vector<std::pair<std::string, torch::Tensor>> named_state(const torch::nn::Module& m) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : m.named_parameters()) out.emplace_back(p.key(), p.value());
  for (const auto& b : m.named_buffers()) out.emplace_back(b.key(), b.value());
  return out;
}

// The same-named tensor of `other`, checked for shape; throws if absent.
const torch::Tensor& matching(const torch::OrderedDict<std::string, torch::Tensor>& params,
                              const torch::OrderedDict<std::string, torch::Tensor>& buffers,
                              const std::string& name, const torch::Tensor& like) {
  const torch::Tensor* t = params.find(name);
  if (!t) t = buffers.find(name);
  if (!t) throw std::runtime_error("ModelEMA: model has no state entry '" + name + "'");
  if (t->sizes() != like.sizes()) throw std::runtime_error("ModelEMA: shape mismatch for '" + name + "'");
  return *t;
}

}  // namespace

ModelEMA::ModelEMA(std::shared_ptr<torch::nn::Module> ema_model, const torch::nn::Module& model,
                   int64_t updates, double decay, double tau)
    : ema_(std::move(ema_model)), updates_(updates), decay_(decay), tau_(tau) {
  if (!ema_) throw std::invalid_argument("ModelEMA: null EMA model");
  torch::NoGradGuard no_grad;
  const auto params = model.named_parameters();
  const auto buffers = model.named_buffers();
  for (auto& [name, t] : named_state(*ema_)) {
    t.copy_(matching(params, buffers, name, t));
    if (t.is_floating_point()) ema_state_.push_back(t);
  }
  for (auto& p : ema_->parameters()) p.set_requires_grad(false);
  ema_->eval();
  int64_t largest = 0;
  for (const auto& t : ema_state_) largest = std::max(largest, t.numel());
  if (!ema_state_.empty()) scratch_ = torch::empty({largest}, ema_state_.front().options());
}

double ModelEMA::decay(int64_t updates) const {
  return decay_ * (1 - std::exp(-static_cast<double>(updates) / tau_));
}

void ModelEMA::bind(const torch::nn::Module& model) {
  const auto params = model.named_parameters();
  const auto buffers = model.named_buffers();
  model_state_.clear();
  for (const auto& [name, t] : named_state(*ema_))
    if (t.is_floating_point()) model_state_.push_back(matching(params, buffers, name, t));
  bound_ = &model;
}

void ModelEMA::update(const torch::nn::Module& model) {
  if (bound_ != &model) bind(model);
  torch::NoGradGuard no_grad;
  updates_ += 1;
  const double d = decay(updates_);
  for (size_t k = 0; k < ema_state_.size(); ++k) {
    torch::Tensor& v = ema_state_[k];
    const torch::Tensor& m = model_state_[k];
    // Same two float roundings as YOLOv5's `v *= d; v += (1 - d) * msd[k]` (no fused multiply-add).
    v.mul_(d);
    if (m.scalar_type() == scratch_.scalar_type() && m.device() == scratch_.device()) {
      torch::Tensor tmp = scratch_.narrow(0, 0, m.numel()).view(m.sizes());
      torch::mul_out(tmp, m, 1 - d);
      v.add_(tmp);
    } else {
      v.add_(m * (1 - d));
    }
  }
}

}  // namespace kestrel
