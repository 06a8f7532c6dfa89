// What a training run needs of its data-parallel job, in one place: where this process stands
// (World), the process group, gradient averaging and SyncBN, and the few agreements ranks must reach
// (a value rank 0 chose, a flag any rank raised, the same options and data everywhere). A
// single-process run holds an inactive DataParallel whose calls cost nothing.
#pragma once
#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <string>

#include "distributed/grad_sync.h"
#include "distributed/process_group.h"
#include "distributed/world.h"

namespace kestrel {

class DataParallel {
 public:
  DataParallel() = default;  // one process
  // Joins the job torchrun's variables describe (WORLD_SIZE > 1), or stays single-process. `device`:
  // where this rank trains (NCCL for CUDA where LibTorch has it, else Gloo).
  static std::unique_ptr<DataParallel> from_environment(std::chrono::milliseconds timeout,
                                                        torch::Device device = torch::kCPU);

  bool active() const { return group_ != nullptr; }
  const World& world() const { return world_; }
  bool main() const { return world_.main(); }
  int size() const { return world_.size; }
  ProcessGroup* group() { return group_.get(); }

  // Ranks other than 0 print only warnings and errors (stdout goes to /dev/null), as YOLOv5's.
  void quiet_secondary_ranks() const;
  // Rank 0's value on every rank.
  std::string from_main(const std::string& key, const std::string& value);
  // Throws on every rank when some rank's fingerprint of `what` differs from rank 0's.
  void check_same(const std::string& what, const std::string& fingerprint);
  // Rank 0's parameters and buffers on every rank (DistributedDataParallel does this at start).
  void broadcast_state(torch::nn::Module& model);
  // True on every rank when `flag` is true on some rank (Ctrl-C, early stopping). any_bits agrees on
  // several flags (bit i of the result: bit i set on some rank) in one exchange; one process returns
  // its own bits without allocating (the trainer asks every step).
  bool any(bool flag) { return any_bits(flag ? 1u : 0u) != 0; }
  uint32_t any_bits(uint32_t bits);
  void barrier();

  // Gradient averaging over these parameters (grad_sync.h).
  void sync_gradients_of(std::vector<torch::Tensor> params, GradSyncOptions options = {});
  void arm_gradient_sync();    // before the backward that ends an accumulation window
  double finish_gradient_sync();  // after it: seconds spent waiting for the exchange
  // Averages the gradients accumulated so far, now: before a checkpoint inside an accumulation
  // window, so that rank 0's saved gradients are the job's (averaging is linear: the window's final
  // exchange then gives what it would have given).
  void average_gradients();
  // --sync-bn: the model's BatchNorms take statistics over the global batch; returns how many.
  int use_sync_batch_norm(torch::nn::Module& model);

 private:
  World world_;
  std::unique_ptr<ProcessGroup> group_;
  std::unique_ptr<GradientSync> grads_;
};

}  // namespace kestrel
