// YOLOv5 v7.0 smart_optimizer parameter groups, Ultralytics' MuSGD groups, per-group lr/momentum
// updates, and the families' `--optimizer auto` rules.
#include "train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <unordered_set>

#include "model/dfl_detect.h"
#include "train/musgd.h"

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

// Every module once, the model first, in the order Python's model.modules() visits them (a module
// registered twice counts once).
std::vector<const torch::nn::Module*> unique_modules(const torch::nn::Module& model) {
  std::vector<const torch::nn::Module*> out{&model};
  std::unordered_set<const torch::nn::Module*> seen{&model};
  for (const auto& m : model.modules(/*include_self=*/false))
    if (seen.insert(m.get()).second) out.push_back(m.get());
  return out;
}

// BaseTrainer.build_optimizer's MuSGD groups: [weights, norm weights, biases, Muon] (a 2-D or 4-D
// parameter goes to Muon first), each as [the head's class branch, the rest].
std::vector<torch::optim::OptimizerParamGroup> musgd_groups(const torch::nn::Module& model, double lr, double momentum,
                                                            double decay) {
  std::unordered_set<const void*> class_branch;
  for (const auto* m : unique_modules(model))
    if (const auto* head = dynamic_cast<const DflDetectImpl*>(m))
      for (const auto& p : head->cv3->parameters()) class_branch.insert(p.unsafeGetTensorImpl());
  enum Kind { weights, norm, biases, muon };
  std::vector<torch::Tensor> split[4][2];  // [kind][0: class branch, 1: the rest]
  for (const auto* m : unique_modules(model)) {
    const bool is_norm = is_norm_layer(*m);
    for (const auto& p : m->named_parameters(/*recurse=*/false)) {
      const int64_t dims = p.value().dim();
      const Kind kind = dims == 2 || dims == 4 ? muon : p.key() == "bias" ? biases : is_norm ? norm : weights;
      split[kind][class_branch.count(p.value().unsafeGetTensorImpl()) ? 0 : 1].push_back(p.value());
    }
  }
  const int64_t role_of[4] = {1, 2, 0, 1};  // the schedule's roles: 0 biases, 1 decayed weights, 2 norm weights
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (int kind = 0; kind < 4; ++kind)
    for (int rest = 0; rest < 2; ++rest) {
      const double scale = rest ? 1.0 : 3.0;
      MuSGDOptions o(lr * scale);
      o.momentum(momentum).nesterov(true).use_muon(kind == muon).role(role_of[kind]).lr_scale(scale);
      o.weight_decay(kind == weights || kind == muon ? decay : 0.0);
      groups.emplace_back(std::move(split[kind][rest]), std::make_unique<MuSGDOptions>(o));
    }
  return groups;
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
  if (name == "MuSGD") return OptimizerKind::MuSGD;
  throw std::invalid_argument("unknown optimizer '" + name + "' (choose SGD, Adam, AdamW or MuSGD)");
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
    c.kind = OptimizerKind::MuSGD;
    c.lr0 = 0.01;
    std::snprintf(line, sizeof line, "optimizer: 'auto' chose MuSGD(lr=0.01, momentum=0.9) for %lld iterations (over 10000), ignoring lr0=%g",
                  static_cast<long long>(iterations), hyp.lr0);
  }
  c.line = line;
  return c;
}

ParamGroups split_param_groups(const torch::nn::Module& model) {
  ParamGroups groups;
  for (const auto* m : unique_modules(model)) classify_own_parameters(*m, groups);
  return groups;
}

std::unique_ptr<torch::optim::Optimizer> smart_optimizer(const torch::nn::Module& model, OptimizerKind kind,
                                                         double lr, double momentum, double decay) {
  switch (kind) {
    case OptimizerKind::SGD:
      return make_grouped<torch::optim::SGD>(
          split_param_groups(model), torch::optim::SGDOptions(lr).momentum(momentum).nesterov(true), decay);
    case OptimizerKind::Adam:
      return make_grouped<torch::optim::Adam>(
          split_param_groups(model), torch::optim::AdamOptions(lr).betas({momentum, 0.999}), decay);
    case OptimizerKind::AdamW:
      return make_grouped<torch::optim::AdamW>(
          split_param_groups(model), torch::optim::AdamWOptions(lr).betas({momentum, 0.999}), decay);
    case OptimizerKind::MuSGD:
      return std::make_unique<MuSGD>(musgd_groups(model, lr, momentum, decay), MuSGDOptions(lr));
  }
  throw std::invalid_argument("smart_optimizer: unknown optimizer kind");
}

void set_group_lr_momentum(torch::optim::Optimizer& optimizer, int group, double lr,
                           std::optional<double> momentum) {
  auto& options = optimizer.param_groups().at(static_cast<size_t>(group)).options();
  options.set_lr(lr);
  if (!momentum) return;
  if (auto* sgd = dynamic_cast<torch::optim::SGDOptions*>(&options)) sgd->momentum(*momentum);
  if (auto* musgd = dynamic_cast<MuSGDOptions*>(&options)) musgd->momentum(*momentum);
}

void apply_schedule_step(torch::optim::Optimizer& optimizer, const TrainSchedule::Step& step) {
  for (size_t g = 0; g < optimizer.param_groups().size(); ++g) {
    const auto* musgd = dynamic_cast<const MuSGDOptions*>(&optimizer.param_groups()[g].options());
    const int role = musgd ? static_cast<int>(musgd->role()) : static_cast<int>(g);
    const double lr = musgd ? step.scaled_lr(role, musgd->lr_scale()) : step.lr.at(role);
    set_group_lr_momentum(optimizer, static_cast<int>(g), lr, step.momentum.at(role));
  }
}

std::vector<double> group_lrs(const torch::optim::Optimizer& optimizer) {
  std::vector<double> lrs;
  for (const auto& group : optimizer.param_groups()) lrs.push_back(group.options().get_lr());
  return lrs;
}

std::vector<double> logged_group_lrs(const torch::optim::Optimizer& optimizer, bool ultralytics) {
  std::vector<double> lrs = group_lrs(optimizer);
  const bool built_in_ultralytics_order = dynamic_cast<const MuSGDOptions*>(&optimizer.param_groups().at(0).options());
  if (ultralytics && !built_in_ultralytics_order) return {lrs.at(1), lrs.at(2), lrs.at(0)};
  return lrs;
}

}  // namespace kestrel
