// YOLOv5 v7.0 ModelEMA: an exponential moving average of every floating-point parameter and
// buffer (BatchNorm running stats included) of the training model, with the ramped decay
// d(u) = decay * (1 - exp(-u / tau)). Integer buffers (num_batches_tracked) are never averaged.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace kestrel {

class ModelEMA {
 public:
  // ema_model: a second instance of the training model's architecture (e.g. built from the same
  // config), on the same device; it receives a copy of all of `model`'s state (as YOLOv5's
  // deepcopy), is put in eval mode and has requires_grad off. `updates` > 0 resumes a run.
  ModelEMA(std::shared_ptr<torch::nn::Module> ema_model, const torch::nn::Module& model, int64_t updates = 0,
           double decay = 0.9999, double tau = 2000.0);

  // One EMA step after an optimizer step: updates += 1, then for every floating state tensor
  // v = d*v + (1-d)*model_v with d = decay(updates), in the tensors' own dtype as PyTorch does.
  // `model` must have the same parameter/buffer names as the EMA model.
  void update(const torch::nn::Module& model);

  // d(u) = decay * (1 - exp(-u / tau)).
  double decay(int64_t updates) const;

  int64_t updates() const { return updates_; }
  void set_updates(int64_t updates) { updates_ = updates; }  // after loading a checkpoint

  torch::nn::Module& module() { return *ema_; }
  const std::shared_ptr<torch::nn::Module>& ptr() const { return ema_; }

 private:
  // The model's floating tensors in the EMA's order, looked up again only when the model changes.
  void bind(const torch::nn::Module& model);

  std::shared_ptr<torch::nn::Module> ema_;
  std::vector<torch::Tensor> ema_state_;    // floating params + buffers of the EMA copy
  std::vector<torch::Tensor> model_state_;  // the matching tensors of the bound model
  const torch::nn::Module* bound_ = nullptr;
  torch::Tensor scratch_;  // flat buffer for (1-d)*model_v, so an update allocates no tensor data
  int64_t updates_;
  double decay_, tau_;
};

}  // namespace kestrel
