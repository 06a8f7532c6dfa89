// YOLOv5 v7.0 smart_optimizer: three parameter groups [biases (no decay), other weights (decay),
// normalization-layer weights (no decay)] for SGD (Nesterov), Adam or AdamW (Ultralytics' trainer
// groups the same way), Ultralytics' eight MuSGD groups, the per-batch lr/momentum setter the warmup
// needs, and `--optimizer auto`.
#pragma once
#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "train/lr_schedule.h"

namespace kestrel {

enum class OptimizerKind { SGD, Adam, AdamW, MuSGD };

// "SGD", "Adam", "AdamW" (train.py's --optimizer choices) or "MuSGD" (Ultralytics 8.4's); throws
// std::invalid_argument.
OptimizerKind parse_optimizer_kind(const std::string& name);

// What a run's --optimizer resolves to: the kind, the lr0 and momentum (Adam's beta1) it is built
// with, the bias group's warmup start, and a line saying why.
struct OptimizerChoice {
  OptimizerKind kind = OptimizerKind::SGD;
  double lr0 = 0.01, momentum = 0.937, warmup_bias_lr = 0.1;
  std::string line;
};

// A named kind takes the hyp's lr0, momentum and warmup_bias_lr. "auto" is each family's default:
// YOLOv5 has no rule, so SGD as named. Ultralytics (BaseTrainer.build_optimizer): when the run has at
// most 10,000 iterations, ceil(images / max(batch, nbs)) x epochs, AdamW at lr0 = round(0.002 x 5 /
// (4 + nc), 6), beta1 0.9, bias warmup from 0. Beyond, MuSGD (train/musgd.h) at lr0 0.01, momentum 0.9.
OptimizerChoice choose_optimizer(const std::string& requested, bool ultralytics, const Hyp& hyp, int nc, int64_t images,
                                 int batch, int nbs, int epochs);

// The model's parameters split as smart_optimizer does, walking every module's own parameters:
// a parameter named "bias" -> biases; "weight" of a normalization layer (BatchNorm, GroupNorm,
// LayerNorm, InstanceNorm, LocalResponseNorm) -> norm_weights; anything else -> decayed.
// Frozen parameters (requires_grad == false) are kept, as YOLOv5 keeps them: they never get a
// gradient, so the optimizer skips them.
struct ParamGroups {
  std::vector<torch::Tensor> biases, decayed, norm_weights;
};
ParamGroups split_param_groups(const torch::nn::Module& model);

// Optimizer with param_groups() ordered [0: biases, 1: decayed weights, 2: norm weights], every
// group starting at lr. SGD: momentum, nesterov, weight decay only in group 1. Adam/AdamW:
// betas (momentum, 0.999), weight decay only in group 1. `decay` is the already scaled weight
// decay (TrainSchedule::weight_decay()).
// MuSGD: Ultralytics' eight groups, in its order: weights (decay), norm weights, biases, Muon
// (every 2-D or 4-D parameter, decay), each split into the head's class branch (cv3, at 3 x lr) and
// the rest: [weights x3, weights, norm x3, norm, biases x3, biases, Muon x3, Muon]. Nesterov.
std::unique_ptr<torch::optim::Optimizer> smart_optimizer(const torch::nn::Module& model, OptimizerKind kind,
                                                         double lr, double momentum, double decay);

// Sets one group's lr and, for SGD and MuSGD, its momentum. Adam/AdamW groups have no 'momentum' key in
// YOLOv5, so its warmup leaves their betas alone; momentum is ignored for them likewise.
void set_group_lr_momentum(torch::optim::Optimizer& optimizer, int group, double lr,
                           std::optional<double> momentum);

// Applies a TrainSchedule::Step's lr and momentum to every group: group g takes role g's, or for
// MuSGD its own role's times its lr_scale (call once per batch).
void apply_schedule_step(torch::optim::Optimizer& optimizer, const TrainSchedule::Step& step);

// Current lr of each group, in the optimizer's order.
std::vector<double> group_lrs(const torch::optim::Optimizer& optimizer);

// The same in the order the family's trainer logs them to results.csv: Kestrel's own
// for YOLOv5 (x/lr0..2), Ultralytics' [decayed weights, norm weights, biases] (lr/pg0..2) for its
// models, and MuSGD's eight as built (lr/pg0..7).
std::vector<double> logged_group_lrs(const torch::optim::Optimizer& optimizer, bool ultralytics);

}  // namespace kestrel
