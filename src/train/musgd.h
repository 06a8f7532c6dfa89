// Ultralytics 8.4's MuSGD (ultralytics/optim/muon.py), the optimizer its trainer's `auto` picks for runs
// of over 10,000 iterations: matrices and conv filters get a Muon step (momentum, then the update
// orthogonalized by five bf16 Newton-Schulz iterations) at 0.2 x lr plus an SGD step at 1.0 x lr; every
// other parameter an SGD step alone. Nesterov momentum, weight decay on the SGD part only. The batching
// of Newton-Schulz calls (matrices with the same columns, rows zero-padded, split where rows differ
// by more than 16x) is Ultralytics' too: it decides the bf16 shapes, hence the rounding.
#pragma once
#include <torch/torch.h>

#include <vector>

namespace kestrel {

// zeropower_via_newtonschulz5: a matrix [r, c] or batch [n, r, c] scaled to unit Frobenius norm, then
// X <- 3.4445 X + (-4.7750 A + 2.0315 A^2) X with A = X X^T, five times, in bf16 (on X^T when r > c).
// Returns bf16, the input's shape.
torch::Tensor newton_schulz5(const torch::Tensor& g);

// muon_update: each momentum becomes beta m + (1 - beta) g (in place); the update (nesterov:
// beta m + (1 - beta) g, else m) flattened to [rows, cols], orthogonalized and scaled by
// sqrt(max(1, g.size(-2) / g.size(-1))) (1 for a conv filter whose kernel is square). Returns the
// updates in the gradients' shapes and dtype.
std::vector<torch::Tensor> muon_updates(const std::vector<torch::Tensor>& grads, std::vector<torch::Tensor>& momentums,
                                        double beta, bool nesterov);

struct MuSGDOptions : public torch::optim::OptimizerCloneableOptions<MuSGDOptions> {
  explicit MuSGDOptions(double lr) : lr_(lr) {}
  TORCH_ARG(double, lr);
  TORCH_ARG(double, momentum) = 0;
  TORCH_ARG(double, weight_decay) = 0;
  TORCH_ARG(bool, nesterov) = false;
  TORCH_ARG(bool, use_muon) = false;
  // What the schedule sets on this group: the lr and momentum of role 0 (biases), 1 (decayed
  // weights) or 2 (norm weights), the lr times lr_scale (Ultralytics' class branch runs at 3x).
  TORCH_ARG(int64_t, role) = 1;
  TORCH_ARG(double, lr_scale) = 1.0;

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

struct MuSGDParamState : public torch::optim::OptimizerCloneableParamState<MuSGDParamState> {
  TORCH_ARG(torch::Tensor, momentum_buffer);      // Muon's in a Muon group, else SGD's
  TORCH_ARG(torch::Tensor, sgd_momentum_buffer);  // a Muon group's SGD momentum

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
};

class MuSGD : public torch::optim::Optimizer {
 public:
  static constexpr double kMuonScale = 0.2, kSgdScale = 1.0;  // BaseTrainer.build_optimizer's muon, sgd

  MuSGD(const std::vector<torch::optim::OptimizerParamGroup>& groups, const MuSGDOptions& defaults)
      : Optimizer(groups, std::make_unique<MuSGDOptions>(defaults)) {}

  torch::Tensor step(LossClosure closure = nullptr) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

 private:
  void step_group(torch::optim::OptimizerParamGroup& group);
};

}  // namespace kestrel
