// MuSGD: Newton-Schulz orthogonalization, Ultralytics' batching of it, and the hybrid Muon + SGD step.
#include "train/musgd.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace kestrel {
namespace {

// One update flattened for orthogonalization: its index, the [rows, cols] matrix, and the strides to
// write the result back with (none: the matrix was a row-major copy, reshaped back).
struct MuonItem {
  size_t index;
  torch::Tensor matrix;
  std::optional<std::vector<int64_t>> strides;
};

// Matrices that can share one batched Newton-Schulz call: same columns, scale, device and dtype.
struct MuonBucket {
  int64_t cols;
  double scale;
  torch::Device device;
  torch::ScalarType dtype;
  std::vector<MuonItem> items;
};

// The update in its own memory order (a view for NCHW and channels-last filters alike: permuting the
// columns permutes the orthogonalized columns the same way), else a row-major copy.
MuonItem flatten_update(size_t index, const torch::Tensor& u) {
  const bool dense = u.is_contiguous();
  const bool nhwc = !dense && u.dim() == 4 && u.is_contiguous(at::MemoryFormat::ChannelsLast);
  torch::Tensor m = nhwc ? u.permute({0, 2, 3, 1}).flatten(1) : u.dim() > 2 ? u.flatten(1) : u.contiguous();
  std::optional<std::vector<int64_t>> strides;
  if (dense || nhwc) strides = u.strides().vec();
  return {index, std::move(m), std::move(strides)};
}

std::vector<MuonBucket> bucket_updates(const std::vector<torch::Tensor>& updates, const std::vector<torch::Tensor>& grads) {
  std::vector<MuonBucket> buckets;  // in order of first appearance, as a Python dict keeps them
  for (size_t i = 0; i < updates.size(); ++i) {
    MuonItem item = flatten_update(i, updates[i]);
    const double ratio = static_cast<double>(grads[i].size(-2)) / static_cast<double>(grads[i].size(-1));
    const double scale = std::pow(std::max(1.0, ratio), 0.5);
    const int64_t cols = item.matrix.size(1);
    auto it = std::find_if(buckets.begin(), buckets.end(), [&](const MuonBucket& b) {
      return b.cols == cols && b.scale == scale && b.device == item.matrix.device() && b.dtype == item.matrix.scalar_type();
    });
    if (it == buckets.end())
      it = buckets.insert(buckets.end(), MuonBucket{cols, scale, item.matrix.device(), item.matrix.scalar_type(), {}});
    it->items.push_back(std::move(item));
  }
  return buckets;
}

// A bucket sorted by rows (most first, stable) and cut where the largest matrix of a run has more
// than 16x the rows of the next, which bounds the zero padding.
std::vector<std::vector<MuonItem>> split_by_rows(std::vector<MuonItem> items) {
  std::stable_sort(items.begin(), items.end(),
                   [](const MuonItem& a, const MuonItem& b) { return a.matrix.size(0) > b.matrix.size(0); });
  std::vector<std::vector<MuonItem>> runs;
  size_t start = 0;
  for (size_t j = 1; j <= items.size(); ++j)
    if (j == items.size() || items[start].matrix.size(0) > 16 * items[j].matrix.size(0)) {
      runs.emplace_back(std::make_move_iterator(items.begin() + static_cast<std::ptrdiff_t>(start)),
                        std::make_move_iterator(items.begin() + static_cast<std::ptrdiff_t>(j)));
      start = j;
    }
  return runs;
}

// One batched call: rows zero-padded (zeros stay zero through the iteration), results written back
// into `updates` in each gradient's shape.
void orthogonalize_run(const std::vector<MuonItem>& run, const MuonBucket& bucket, const std::vector<torch::Tensor>& grads,
                       std::vector<torch::Tensor>& updates) {
  const int64_t rows = run.front().matrix.size(0);
  torch::Tensor x = torch::zeros({static_cast<int64_t>(run.size()), rows, bucket.cols},
                                 torch::TensorOptions().dtype(bucket.dtype).device(bucket.device));
  for (size_t j = 0; j < run.size(); ++j) x[static_cast<int64_t>(j)].narrow(0, 0, run[j].matrix.size(0)).add_(run[j].matrix);
  x = newton_schulz5(x).contiguous().to(grads[run.front().index].scalar_type()).mul_(bucket.scale);
  for (size_t j = 0; j < run.size(); ++j) {
    const MuonItem& item = run[j];
    torch::Tensor rows_of = x[static_cast<int64_t>(j)].narrow(0, 0, item.matrix.size(0));
    const auto shape = grads[item.index].sizes();
    updates[item.index] = item.strides ? rows_of.as_strided(shape, *item.strides) : rows_of.reshape(shape);
  }
}

MuSGDParamState& state_of(torch::optim::Optimizer& optimizer, const torch::Tensor& p, bool use_muon) {
  auto& state = optimizer.state()[p.unsafeGetTensorImpl()];
  if (!state) {
    auto fresh = std::make_unique<MuSGDParamState>();
    fresh->momentum_buffer(torch::zeros_like(p));
    if (use_muon) fresh->sgd_momentum_buffer(torch::zeros_like(p));
    state = std::move(fresh);
  }
  return static_cast<MuSGDParamState&>(*state);
}

}  // namespace

torch::Tensor newton_schulz5(const torch::Tensor& g) {
  TORCH_CHECK(g.dim() == 2 || g.dim() == 3, "newton_schulz5: a matrix or a batch of matrices, not ", g.dim(), " dims");
  const bool tall = g.size(-2) > g.size(-1);
  torch::Tensor x = g.reshape({-1, g.size(-2), g.size(-1)}).to(torch::kBFloat16);
  x = x / (torch::linalg_vector_norm(x, 2, std::vector<int64_t>{-2, -1}, /*keepdim=*/true, std::nullopt) + 1e-7);
  if (tall) x = x.transpose(-2, -1);
  const double a = 3.4445, b = -4.7750, c = 2.0315;
  for (int i = 0; i < 5; ++i) {
    const torch::Tensor gram = torch::matmul(x, x.transpose(-2, -1));
    const torch::Tensor poly = torch::baddbmm(gram, gram, gram, /*beta=*/b, /*alpha=*/c);
    x = torch::baddbmm(x, poly, x, /*beta=*/a);
  }
  if (tall) x = x.transpose(-2, -1);
  return x.reshape(g.sizes());
}

std::vector<torch::Tensor> muon_updates(const std::vector<torch::Tensor>& grads, std::vector<torch::Tensor>& momentums,
                                        double beta, bool nesterov) {
  std::vector<torch::Tensor> updates(grads.size());
  for (size_t i = 0; i < grads.size(); ++i) {
    momentums[i].mul_(beta).add_(grads[i], 1 - beta);
    updates[i] = nesterov ? (momentums[i] * beta).add_(grads[i], 1 - beta) : momentums[i];
  }
  for (const MuonBucket& bucket : bucket_updates(updates, grads))
    for (const auto& run : split_by_rows(bucket.items)) orthogonalize_run(run, bucket, grads, updates);
  return updates;
}

void MuSGDOptions::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(momentum);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_decay);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(nesterov);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(use_muon);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(role);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr_scale);
}

void MuSGDOptions::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, momentum);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_decay);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, nesterov);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, use_muon);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(int64_t, role);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr_scale);
}

void MuSGDParamState::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(momentum_buffer);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(sgd_momentum_buffer);  // undefined outside Muon groups: not written
}

void MuSGDParamState::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, momentum_buffer);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, sgd_momentum_buffer);
}

torch::Tensor MuSGD::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) step_group(group);
  return loss;
}

// Muon groups: the Muon step at kMuonScale x lr first, then SGD at kSgdScale x lr with its own
// momentum, weight decay read from the parameters the Muon step already moved (as muon.py orders it).
void MuSGD::step_group(torch::optim::OptimizerParamGroup& group) {
  const auto& o = static_cast<const MuSGDOptions&>(group.options());
  std::vector<torch::Tensor> params, grads, buffers;
  for (const auto& p : group.params())
    if (p.grad().defined()) params.push_back(p), grads.push_back(p.grad());
  if (params.empty()) return;
  double lr = o.lr();
  if (o.use_muon()) {
    std::vector<torch::Tensor> momentums;
    for (const auto& p : params) {
      MuSGDParamState& state = state_of(*this, p, true);
      momentums.push_back(state.momentum_buffer());
      buffers.push_back(state.sgd_momentum_buffer());
    }
    const std::vector<torch::Tensor> updates = muon_updates(grads, momentums, o.momentum(), o.nesterov());
    for (size_t i = 0; i < params.size(); ++i) params[i].add_(updates[i], -(lr * kMuonScale));
    lr *= kSgdScale;
  } else {
    for (const auto& p : params) buffers.push_back(state_of(*this, p, false).momentum_buffer());
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const torch::Tensor g = o.weight_decay() != 0 ? grads[i].add(params[i], o.weight_decay()) : grads[i];
    buffers[i].mul_(o.momentum()).add_(g);
    params[i].add_(o.nesterov() ? g.add(buffers[i], o.momentum()) : buffers[i], -lr);
  }
}

void MuSGD::save(torch::serialize::OutputArchive& archive) const {
  torch::optim::serialize<MuSGDParamState, MuSGDOptions>(archive, *this);
}

void MuSGD::load(torch::serialize::InputArchive& archive) {
  torch::optim::serialize<MuSGDParamState, MuSGDOptions>(archive, *this);
}

}  // namespace kestrel
