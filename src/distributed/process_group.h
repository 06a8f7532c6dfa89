// The job's collective communication, on PyTorch's c10d: rendezvous through a TCPStore at
// MASTER_ADDR:MASTER_PORT (hosted by rank 0, or by torchrun's agent), then a Gloo process group over
// every rank. Each failure a user meets here (port in use, master unreachable, ranks that disagree on
// WORLD_SIZE, options or data, a rank gone) becomes one error saying what happened and what to do,
// and every wait is bounded by the job's timeout instead of hanging.
#pragma once
#include <torch/torch.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "distributed/world.h"

namespace c10d {
class Store;
class ProcessGroup;
class Backend;
}  // namespace c10d

namespace kestrel {

// A collective still in flight (ProcessGroup::all_reduce_async).
class PendingReduce {
 public:
  PendingReduce() = default;
  explicit PendingReduce(std::shared_ptr<void> work) : work_(std::move(work)) {}
  bool pending() const { return work_ != nullptr; }
  void wait();  // throws as the blocking calls do; a no-op when nothing is pending

 private:
  std::shared_ptr<void> work_;  // c10d::Work, kept out of this header (Gloo's headers are heavy)
};

class ProcessGroup {
 public:
  // Rendezvous and group creation; throws std::runtime_error with the cause and the fix. On a CUDA
  // device the group is NCCL's, else Gloo's.
  ProcessGroup(const World& world, std::chrono::milliseconds timeout, torch::Device device = torch::kCPU);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  const World& world() const { return world_; }
  const std::string& backend() const { return backend_; }  // "gloo" or "nccl"
  const torch::Device& device() const { return device_; }      // where collectives want their tensors

  // Sum over ranks, in place (the tensors stay valid until wait()).
  PendingReduce all_reduce_async(std::vector<torch::Tensor>& tensors);
  void all_reduce_sum(torch::Tensor& t);
  void all_reduce_max(torch::Tensor& t);
  void broadcast(std::vector<torch::Tensor>& tensors, int root = 0);  // in place, from root's values
  void barrier();
  // Root's string, on every rank (through the store).
  std::string broadcast_text(const std::string& key, const std::string& text, int root = 0);
  // Every rank passes its own fingerprint of `what`; throws on the ranks whose value differs from
  // rank 0's ("rank 1's options differ from rank 0's: ...").
  void check_same(const std::string& what, const std::string& fingerprint);

 private:
  void check_world_sizes();
  std::string scoped(const std::string& key) const;

  void create_gloo();
  void create_nccl();
  // Runs a blocking collective on t, through a dense copy on the group's device when t is not one.
  void on_device(torch::Tensor& t, const std::function<void(std::vector<torch::Tensor>&)>& collective);

  World world_;
  std::chrono::milliseconds timeout_;
  torch::Device device_;
  std::string backend_ = "gloo";
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::Backend> group_;  // ProcessGroupGloo or ProcessGroupNCCL
  int text_calls_ = 0;
};

// The Gloo version c10d was built against ("0.5.0").
std::string gloo_version();

// Turns a collective's failure into one line: which collective, that a rank is gone or too slow,
// and what the user can do. Used by the blocking calls and PendingReduce::wait.
[[noreturn]] void throw_collective_error(const char* what, const std::exception& e);

}  // namespace kestrel
