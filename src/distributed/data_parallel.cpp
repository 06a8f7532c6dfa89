// The trainer's side of a data-parallel job.
#include "distributed/data_parallel.h"

#include <cstdio>
#include <iostream>

#include "distributed/sync_batch_norm.h"

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
  group_->broadcast(tensors);
}

uint32_t DataParallel::any_bits(uint32_t bits) {
  if (!active()) return bits;
  torch::Tensor t = torch::empty({32}, torch::kInt32);  // one element a bit: MAX of each is its OR
  int32_t* v = t.data_ptr<int32_t>();
  for (int i = 0; i < 32; ++i) v[i] = (bits >> i) & 1u;
  group_->all_reduce_max(t);
  v = t.data_ptr<int32_t>();
  uint32_t out = 0;
  for (int i = 0; i < 32; ++i) out |= static_cast<uint32_t>(v[i] != 0) << i;
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
