// Synchronised BatchNorm as a custom autograd function: one all-reduce of (sum, sum of squares,
// count) in forward, one of (sum dy, sum dy*(x-mean)) in backward.
#include "distributed/sync_batch_norm.h"

#include "model/layers.h"

namespace kestrel {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

torch::Tensor per_channel(const torch::Tensor& v) { return v.view({1, -1, 1, 1}); }

struct SyncBatchNormFn : public torch::autograd::Function<SyncBatchNormFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& bias, torch::Tensor running_mean, torch::Tensor running_var,
                               double eps, double momentum, ProcessGroup* group) {
    const torch::Tensor xf = x.to(torch::kFloat32);
    const int64_t c = x.size(1);
    // Local mean and squared deviations (accurate two-pass), turned into sums in double: adding them
    // over ranks then loses nothing that float BatchNorm would keep.
    auto [var, mean] = torch::var_mean(xf, {0, 2, 3}, /*unbiased=*/false);
    const double n_local = static_cast<double>(x.numel() / c);
    const torch::Tensor mean_d = mean.to(torch::kFloat64);
    torch::Tensor stats = torch::cat({mean_d * n_local, (var.to(torch::kFloat64) + mean_d * mean_d) * n_local,
                                      torch::full({1}, n_local, mean_d.options())});
    group->all_reduce_sum(stats);
    const double n = stats[2 * c].item<double>();
    const torch::Tensor gmean_d = stats.narrow(0, 0, c) / n;
    const torch::Tensor gvar_d = (stats.narrow(0, c, c) / n - gmean_d * gmean_d).clamp_min(0);
    const torch::Tensor gmean = gmean_d.to(torch::kFloat32), gvar = gvar_d.to(torch::kFloat32);
    const torch::Tensor invstd = torch::rsqrt(gvar + eps);
    {
      torch::NoGradGuard no_grad;
      running_mean.mul_(1 - momentum).add_(gmean, momentum);
      running_var.mul_(1 - momentum).add_(gvar * (n / std::max(1.0, n - 1)), momentum);
    }
    ctx->save_for_backward({xf, weight, gmean, invstd});
    ctx->saved_data["n"] = n;
    ctx->saved_data["group"] = reinterpret_cast<int64_t>(group);
    ctx->saved_data["dtype"] = static_cast<int64_t>(x.scalar_type());
    const torch::Tensor y = (xf - per_channel(gmean)) * per_channel(invstd * weight) + per_channel(bias);
    return y.to(x.scalar_type());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    const variable_list saved = ctx->get_saved_variables();
    const torch::Tensor &xf = saved[0], &weight = saved[1], &mean = saved[2], &invstd = saved[3];
    const double n = ctx->saved_data["n"].toDouble();
    auto* group = reinterpret_cast<ProcessGroup*>(ctx->saved_data["group"].toInt());
    const torch::Tensor dy = grad_out[0].to(torch::kFloat32);
    const torch::Tensor xmu = xf - per_channel(mean);
    const int64_t c = xf.size(1);
    const torch::Tensor sum_dy = dy.sum({0, 2, 3});
    const torch::Tensor sum_dy_xmu = (dy * xmu).sum({0, 2, 3});
    const torch::Tensor grad_weight = sum_dy_xmu * invstd, grad_bias = sum_dy;  // this rank's share
    torch::Tensor sums = torch::cat({sum_dy, sum_dy_xmu});
    group->all_reduce_sum(sums);
    const torch::Tensor g_dy = sums.narrow(0, 0, c) / n, g_dy_xmu = sums.narrow(0, c, c) / n;
    const torch::Tensor grad_x =
        (dy - per_channel(g_dy) - xmu * per_channel(invstd * invstd * g_dy_xmu)) * per_channel(weight * invstd);
    const auto dtype = static_cast<torch::ScalarType>(ctx->saved_data["dtype"].toInt());
    return {grad_x.to(dtype), grad_weight, grad_bias, torch::Tensor(), torch::Tensor(),
            torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor sync_batch_norm(torch::nn::BatchNorm2dImpl& bn, const torch::Tensor& x, ProcessGroup& group) {
  const double momentum = bn.options.momentum().value_or(0.1);
  if (bn.num_batches_tracked.defined()) {
    torch::NoGradGuard no_grad;
    bn.num_batches_tracked.add_(1);
  }
  return SyncBatchNormFn::apply(x, bn.weight, bn.bias, bn.running_mean, bn.running_var, bn.options.eps(), momentum, &group);
}

int use_sync_batch_norm(torch::nn::Module& model, ProcessGroup& group) {
  int n = 0;
  for (const auto& m : model.modules()) {
    auto* conv = dynamic_cast<ConvImpl*>(m.get());
    if (!conv || conv->fused()) continue;
    conv->bn_forward = [&group](torch::nn::BatchNorm2dImpl& bn, const torch::Tensor& x) { return sync_batch_norm(bn, x, group); };
    ++n;
  }
  return n;
}

}  // namespace kestrel
