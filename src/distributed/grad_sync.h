// Data-parallel gradient averaging, overlapped with backward (what DistributedDataParallel's Reducer
// does in PyTorch; LibTorch has no C++ DDP). Parameters are grouped into buckets in reverse order of
// registration, roughly the order backward produces their gradients; a post-hook on each parameter's
// gradient accumulator counts it ready, and a bucket whose gradients are all ready is copied into one
// flat buffer and all-reduced asynchronously while backward goes on. finish() waits for what is still
// in flight (the exposed communication time) and writes the average back into every .grad.
// Only the backward that closes an accumulation window is reduced (arm()): summing locally first and
// averaging once gives the same result as averaging every micro-batch, with one exchange instead of many.
#pragma once
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "distributed/process_group.h"

namespace kestrel {

struct GradSyncOptions {
  size_t bucket_bytes = 4u << 20;  // buffer size of a bucket (the last one may be larger: a parameter is never split)
  bool overlap = true;             // false: one flat all-reduce of every gradient after backward (for comparison)
};

class GradientSync {
 public:
  GradientSync(ProcessGroup& group, std::vector<torch::Tensor> params, GradSyncOptions options = {});
  ~GradientSync();
  GradientSync(const GradientSync&) = delete;
  GradientSync& operator=(const GradientSync&) = delete;

  // The next backward completes an accumulation window: reduce its gradients.
  void arm();
  // After that backward: launches the buckets not yet sent (parameters without a gradient count as
  // zero), waits for all, divides by the world size. Returns the seconds spent waiting.
  double finish();
  size_t buckets() const { return buckets_.size(); }

 private:
  struct Bucket {
    std::vector<size_t> params;
    torch::Tensor flat;
    size_t ready = 0;
    bool sent = false;
    PendingReduce work;
  };
  struct HookState;
  void on_ready(size_t param);
  void send(Bucket& b);

  ProcessGroup& group_;
  std::vector<torch::Tensor> params_;
  GradSyncOptions options_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;       // per parameter
  std::vector<int64_t> offset_;         // per parameter, in its bucket's buffer
  std::vector<char> seen_;              // per parameter: counted ready in this backward
  std::shared_ptr<HookState> hooks_;    // shared with the hooks, cleared on destruction
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;  // a leaf only weakly owns its own
  bool armed_ = false;
};

}  // namespace kestrel
