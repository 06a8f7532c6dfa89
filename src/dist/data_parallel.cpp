// The trainer's side of a data-parallel job.
#include "dist/data_parallel.h"

#include <cstdio>
#include <iostream>

#include "dist/sync_batch_norm.h"

namespace kestrel {

std::unique_ptr<DataParallel> DataParallel::from_environment(std::chrono::milliseconds timeout, torch::Device device) {
  auto dp = std::make_unique<DataParallel>();
  dp->world_ = world_from_env();
  if (dp->world_.distributed()) dp->group_ = std::make_unique<ProcessGroup>(dp->world_, timeout, device);
  return dp;
}

void DataParallel::quiet_secondary_ranks() const {
  if (!active() || main()) return;
  std::fflush(stdout);
  if (!std::freopen("/dev/null", "w", stdout)) std::cerr << "WARNING: rank " << world_.rank << " could not silence its output\n";
}

std::string DataParallel::from_main(const std::string& key, const std::string& value) {
  return active() ? group_->broadcast_text(key, value) : value;
}

void DataParallel::check_same(const std::string& what, const std::string& fingerprint) {
  if (active()) group_->check_same(what, fingerprint);
}

void DataParallel::broadcast_state(torch::nn::Module& model) {
  if (!active()) return;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> tensors;
  for (const auto& p : model.parameters()) tensors.push_back(p);
  for (const auto& b : model.buffers()) tensors.push_back(b);
  for (auto& t : tensors) {
    // Gloo broadcasts dense contiguous tensors: channels-last weights travel through a copy.
    std::vector<torch::Tensor> one{t.is_contiguous() ? t : t.contiguous()};
    group_->broadcast(one);
    if (!one[0].is_same(t)) t.copy_(one[0]);
  }
}

bool DataParallel::any(bool flag) { return any(std::vector<bool>{flag})[0]; }

std::vector<bool> DataParallel::any(const std::vector<bool>& flags) {
  if (!active()) return flags;
  torch::Tensor t = torch::zeros({static_cast<int64_t>(flags.size())}, torch::kInt32);
  for (size_t i = 0; i < flags.size(); ++i) t[i] = flags[i] ? 1 : 0;
  group_->all_reduce_max(t);
  std::vector<bool> out(flags.size());
  for (size_t i = 0; i < flags.size(); ++i) out[i] = t[i].item<int>() != 0;
  return out;
}

void DataParallel::barrier() {
  if (active()) group_->barrier();
}

void DataParallel::sync_gradients_of(std::vector<torch::Tensor> params, GradSyncOptions options) {
  if (active()) grads_ = std::make_unique<GradientSync>(*group_, std::move(params), options);
}

void DataParallel::arm_gradient_sync() {
  if (grads_) grads_->arm();
}

double DataParallel::finish_gradient_sync() { return grads_ ? grads_->finish() : 0.0; }

void DataParallel::average_gradients() {
  if (!grads_) return;
  grads_->arm();
  grads_->finish();
}

int DataParallel::use_sync_batch_norm(torch::nn::Module& model) {
  return active() ? kestrel::use_sync_batch_norm(model, *group_) : 0;
}

}  // namespace kestrel
