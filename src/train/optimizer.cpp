// YOLOv5 v7.0 smart_optimizer parameter groups, per-group lr/momentum updates, and the families'
// `--optimizer auto` rules.
#include "train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <unordered_set>

namespace kestrel {
namespace {

// YOLOv5 treats every torch.nn class with "Norm" in its name as a normalization layer.
bool is_norm_layer(const torch::nn::Module& m) {
  using namespace torch::nn;
  return dynamic_cast<const BatchNorm1dImpl*>(&m) || dynamic_cast<const BatchNorm2dImpl*>(&m) ||
         dynamic_cast<const BatchNorm3dImpl*>(&m) || dynamic_cast<const InstanceNorm1dImpl*>(&m) ||
         dynamic_cast<const InstanceNorm2dImpl*>(&m) || dynamic_cast<const InstanceNorm3dImpl*>(&m) ||
         dynamic_cast<const LayerNormImpl*>(&m) || dynamic_cast<const GroupNormImpl*>(&m) ||
         dynamic_cast<const LocalResponseNormImpl*>(&m);
}

void classify_own_parameters(const torch::nn::Module& m, ParamGroups& groups) {
  const bool norm = is_norm_layer(m);
  for (const auto& p : m.named_parameters(/*recurse=*/false)) {
    if (p.key() == "bias")
      groups.biases.push_back(p.value());
    else if (p.key() == "weight" && norm)
      groups.norm_weights.push_back(p.value());
    else
      groups.decayed.push_back(p.value());
  }
}

template <typename Optim, typename Options>
std::unique_ptr<torch::optim::Optimizer> make_grouped(ParamGroups groups, const Options& base, double decay) {
  Options no_decay = base, with_decay = base;
  no_decay.weight_decay(0.0);
  with_decay.weight_decay(decay);
  std::vector<torch::optim::OptimizerParamGroup> param_groups;
  param_groups.emplace_back(std::move(groups.biases), std::make_unique<Options>(no_decay));
  param_groups.emplace_back(std::move(groups.decayed), std::make_unique<Options>(with_decay));
  param_groups.emplace_back(std::move(groups.norm_weights), std::make_unique<Options>(no_decay));
  return std::make_unique<Optim>(std::move(param_groups), no_decay);
}

}  // namespace

OptimizerKind parse_optimizer_kind(const std::string& name) {
  if (name == "SGD") return OptimizerKind::SGD;
  if (name == "Adam") return OptimizerKind::Adam;
  if (name == "AdamW") return OptimizerKind::AdamW;
  throw std::invalid_argument("unknown optimizer '" + name + "' (choose SGD, Adam or AdamW)");
}

OptimizerChoice choose_optimizer(const std::string& requested, bool ultralytics, const Hyp& hyp, int nc, int64_t images,
                                 int batch, int nbs, int epochs) {
  OptimizerChoice c;
  c.lr0 = hyp.lr0, c.momentum = hyp.momentum, c.warmup_bias_lr = hyp.warmup_bias_lr;
  char line[256];
  if (requested != "auto" || !ultralytics) {
    c.kind = parse_optimizer_kind(requested == "auto" ? "SGD" : requested);
    std::snprintf(line, sizeof line, "optimizer: %s(lr=%g, momentum=%g)", requested == "auto" ? "SGD" : requested.c_str(),
                  c.lr0, c.momentum);
    c.line = line;
    return c;
  }
  const int64_t per_epoch = (images + std::max(batch, nbs) - 1) / std::max(batch, nbs);
  const int64_t iterations = per_epoch * epochs;
  c.warmup_bias_lr = 0.0;
  c.momentum = 0.9;
  if (iterations <= 10000) {
    c.kind = OptimizerKind::AdamW;
    c.lr0 = std::round(0.002 * 5 / (4 + nc) * 1e6) / 1e6;
    std::snprintf(line, sizeof line, "optimizer: 'auto' chose AdamW(lr=%g, momentum=0.9) for %lld iterations (at most 10000), ignoring lr0=%g",
                  c.lr0, static_cast<long long>(iterations), hyp.lr0);
  } else {
    c.kind = OptimizerKind::SGD;
    c.lr0 = 0.01;
    std::snprintf(line, sizeof line, "optimizer: 'auto' chose SGD(lr=0.01, momentum=0.9) for %lld iterations; Ultralytics 8.4 uses MuSGD "
                  "there, which Kestrel does not have, so results will differ from its runs", static_cast<long long>(iterations));
  }
  c.line = line;
  return c;
}

ParamGroups split_param_groups(const torch::nn::Module& model) {
  ParamGroups groups;
  classify_own_parameters(model, groups);
  // Python's model.modules() visits each module object once, even if it is registered twice.
  std::unordered_set<const torch::nn::Module*> seen{&model};
  for (const auto& m : model.modules(/*include_self=*/false))
    if (seen.insert(m.get()).second) classify_own_parameters(*m, groups);
  return groups;
}

std::unique_ptr<torch::optim::Optimizer> smart_optimizer(const torch::nn::Module& model, OptimizerKind kind,
                                                         double lr, double momentum, double decay) {
  ParamGroups groups = split_param_groups(model);
  switch (kind) {
    case OptimizerKind::SGD:
      return make_grouped<torch::optim::SGD>(
          std::move(groups), torch::optim::SGDOptions(lr).momentum(momentum).nesterov(true), decay);
    case OptimizerKind::Adam:
      return make_grouped<torch::optim::Adam>(
          std::move(groups), torch::optim::AdamOptions(lr).betas({momentum, 0.999}), decay);
    case OptimizerKind::AdamW:
      return make_grouped<torch::optim::AdamW>(
          std::move(groups), torch::optim::AdamWOptions(lr).betas({momentum, 0.999}), decay);
  }
  throw std::invalid_argument("smart_optimizer: unknown optimizer kind");
}

void set_group_lr_momentum(torch::optim::Optimizer& optimizer, int group, double lr,
                           std::optional<double> momentum) {
  auto& options = optimizer.param_groups().at(static_cast<size_t>(group)).options();
  options.set_lr(lr);
  if (!momentum) return;
  if (auto* sgd = dynamic_cast<torch::optim::SGDOptions*>(&options)) sgd->momentum(*momentum);
}

void apply_schedule_step(torch::optim::Optimizer& optimizer, const TrainSchedule::Step& step) {
  for (int g = 0; g < 3; ++g) set_group_lr_momentum(optimizer, g, step.lr[g], step.momentum[g]);
}

std::vector<double> group_lrs(const torch::optim::Optimizer& optimizer) {
  std::vector<double> lrs;
  for (const auto& group : optimizer.param_groups()) lrs.push_back(group.options().get_lr());
  return lrs;
}

}  // namespace kestrel
