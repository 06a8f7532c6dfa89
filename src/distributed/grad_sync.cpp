// Bucketed, backward-overlapped gradient all-reduce on gradient-accumulator post-hooks.
#include "distributed/grad_sync.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>

#include <chrono>

namespace kestrel {

struct GradientSync::HookState {
  GradientSync* sync = nullptr;  // nullptr once the GradientSync is gone (the hooks stay on the graph)
};

namespace {

// Runs after a leaf's AccumulateGrad: its .grad now holds the sum of this and earlier micro-batches.
class ReadyHook : public torch::autograd::FunctionPostHook {
 public:
  explicit ReadyHook(std::function<void()> ready) : ready_(std::move(ready)) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    ready_();
    return outputs;
  }

 private:
  std::function<void()> ready_;
};

}  // namespace

GradientSync::GradientSync(ProcessGroup& group, std::vector<torch::Tensor> params, GradSyncOptions options)
    : group_(group), options_(options), hooks_(std::make_shared<HookState>()) {
  for (auto& p : params)
    if (p.requires_grad()) params_.push_back(p);
  bucket_of_.resize(params_.size());
  offset_.resize(params_.size());
  seen_.assign(params_.size(), 0);
  // Reverse registration order; with overlap off, one bucket for all.
  Bucket current;
  size_t bytes = 0;
  auto close = [&] {
    if (current.params.empty()) return;
    int64_t n = 0;
    for (size_t i : current.params) offset_[i] = n, n += params_[i].numel();
    current.flat = torch::zeros({n}, params_[current.params.front()].options().requires_grad(false));
    for (size_t i : current.params) bucket_of_[i] = buckets_.size();
    buckets_.push_back(std::move(current));
    current = Bucket{};
    bytes = 0;
  };
  for (size_t k = params_.size(); k-- > 0;) {
    current.params.push_back(k);
    bytes += params_[k].numel() * params_[k].element_size();
    if (options_.overlap && bytes >= options_.bucket_bytes) close();
  }
  close();
  hooks_->sync = this;
  if (!options_.overlap) return;
  for (size_t i = 0; i < params_.size(); ++i) {
    std::shared_ptr<torch::autograd::Node> acc = torch::autograd::impl::grad_accumulator(params_[i]);
    std::shared_ptr<HookState> state = hooks_;
    acc->add_post_hook(std::make_unique<ReadyHook>([state, i] {
      if (state->sync) state->sync->on_ready(i);
    }));
    accumulators_.push_back(std::move(acc));
  }
}

GradientSync::~GradientSync() {
  hooks_->sync = nullptr;
  for (auto& b : buckets_) {
    try {
      b.work.wait();
    } catch (...) {  // a failed exchange was reported where it was awaited
    }
  }
}

void GradientSync::arm() {
  armed_ = true;
  std::fill(seen_.begin(), seen_.end(), 0);
  for (auto& b : buckets_) b.ready = 0, b.sent = false;
}

void GradientSync::on_ready(size_t param) {
  if (!armed_ || seen_[param]) return;
  seen_[param] = 1;
  Bucket& b = buckets_[bucket_of_[param]];
  if (++b.ready == b.params.size()) send(b);
}

void GradientSync::send(Bucket& b) {
  for (size_t i : b.params) {
    const torch::Tensor& g = params_[i].grad();
    torch::Tensor slot = b.flat.narrow(0, offset_[i], params_[i].numel());
    if (g.defined())
      slot.copy_(g.reshape({-1}));  // reshape: channels-last gradients are not viewable as flat
    else
      slot.zero_();
  }
  std::vector<torch::Tensor> t{b.flat};
  b.work = group_.all_reduce_async(t);
  b.sent = true;
}

double GradientSync::finish() {
  if (!armed_) return 0;
  armed_ = false;
  torch::NoGradGuard no_grad;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto& b : buckets_)
    if (!b.sent) send(b);
  const double inv = 1.0 / group_.world().size;
  for (auto& b : buckets_) {
    b.work.wait();
    b.flat.mul_(inv);
    for (size_t i : b.params) {
      torch::Tensor& p = params_[i];
      torch::Tensor avg = b.flat.narrow(0, offset_[i], p.numel()).view(p.sizes());
      if (p.grad().defined())
        p.mutable_grad().copy_(avg);
      else
        p.mutable_grad() = avg.clone().contiguous(p.suggest_memory_format());
    }
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace kestrel
