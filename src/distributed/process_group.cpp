// c10d rendezvous and the Gloo group, with the errors a user can act on.
#include "distributed/process_group.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#include <gloo/config.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace kestrel {

namespace {

std::string seconds_text(std::chrono::milliseconds t) { return std::to_string(t.count() / 1000) + " s"; }

bool mentions(const std::string& text, std::initializer_list<const char*> words) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* w : words)
    if (lower.find(w) != std::string::npos) return true;
  return false;
}

// The first line of a c10 message: its C++ trace follows on the next lines.
std::string first_line(const std::exception& e) {
  const std::string s = e.what();
  return s.substr(0, s.find('\n'));
}

std::string endpoint(const World& w) { return w.master_addr + ":" + std::to_string(w.master_port); }

c10::intrusive_ptr<c10d::Store> connect_store(const World& w, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(w.master_port);
  o.isServer = w.main() && !w.agent_store;
  o.waitWorkers = false;  // ranks are counted by check_world_sizes, which can tell a mismatch from a wait
  o.timeout = timeout;
  try {
    c10::intrusive_ptr<c10d::Store> store = c10::make_intrusive<c10d::TCPStore>(w.master_addr, o);
    // torchrun's agent store outlives a restart: each attempt gets its own keys, as torch.distributed does.
    if (w.agent_store)
      store = c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + std::to_string(w.restart_count), store);
    return store;
  } catch (const std::exception& e) {
    const std::string why = first_line(e);
    if (o.isServer && mentions(why, {"address already in use", "failed to listen", "errno: 98"}))
      throw std::runtime_error("rank 0 cannot host the job's rendezvous on port " + std::to_string(w.master_port) +
                               ": the port is in use (another job?). Choose a free one with --master-port (or MASTER_PORT). [" +
                               why + "]");
    if (!o.isServer)
      throw std::runtime_error("rank " + std::to_string(w.rank) + " could not reach the master at " + endpoint(w) +
                               " within " + seconds_text(timeout) +
                               ": is node 0 (rank 0) started with the same --master-addr/--master-port, and is the port "
                               "open in the firewall? [" + why + "]");
    throw std::runtime_error("rendezvous at " + endpoint(w) + " failed: " + why);
  }
}

}  // namespace

std::string gloo_version() {
  return std::to_string(GLOO_VERSION_MAJOR) + "." + std::to_string(GLOO_VERSION_MINOR) + "." + std::to_string(GLOO_VERSION_PATCH);
}

void throw_collective_error(const char* what, const std::exception& e) {
  const std::string why = first_line(e);
  const bool timed_out = mentions(why, {"timed out", "timeout"});
  throw std::runtime_error(std::string(what) + (timed_out ? " timed out: a rank stopped answering within the job's --dist-timeout"
                                                           : " failed: another rank of the job is gone (it crashed, was killed, or lost its network)") +
                           ". This rank stops too; the last checkpoint (weights/last.pt) resumes the run with --resume. [" + why + "]");
}

void PendingReduce::wait() {
  if (!work_) return;
  auto work = std::static_pointer_cast<c10::intrusive_ptr<c10d::Work>>(work_);
  work_.reset();
  try {
    (*work)->wait();
  } catch (const std::exception& e) {
    throw_collective_error("gradient all-reduce", e);
  }
}

ProcessGroup::ProcessGroup(const World& world, std::chrono::milliseconds timeout, torch::Device device)
    : world_(world), timeout_(timeout), device_(device) {
  store_ = connect_store(world_, timeout_);
  check_world_sizes();
  if (device_.is_cuda())
    create_nccl();
  else
    create_gloo();
}

void ProcessGroup::create_nccl() {
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout_;
  try {
    group_ = c10::make_intrusive<c10d::ProcessGroupNCCL>(store_, world_.rank, world_.size, options);
    backend_ = "nccl";
  } catch (const std::exception& e) {
    throw std::runtime_error("rank " + std::to_string(world_.rank) + " could not start NCCL (kestrel doctor checks its version; "
                             "NCCL_DEBUG=INFO says more): " + first_line(e));
  }
}

void ProcessGroup::create_gloo() {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout_);
  try {
    // The address the other ranks reach this one at: the master's name on the master's host, else
    // this host's own name (GLOO_SOCKET_IFNAME picks an interface, as in PyTorch).
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    else if (world_.local_size == world_.size || world_.master_addr.rfind("127.", 0) == 0 || world_.master_addr == "localhost")
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(world_.master_addr));
    else
      options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    options->threads = 2;
    group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store_, world_.rank, world_.size, options);
  } catch (const std::exception& e) {
    throw std::runtime_error("rank " + std::to_string(world_.rank) + " could not connect to the other ranks over Gloo within " +
                             seconds_text(timeout_) + " (set GLOO_SOCKET_IFNAME to the network interface the machines share): " +
                             first_line(e));
  }
}

ProcessGroup::~ProcessGroup() = default;

std::string ProcessGroup::scoped(const std::string& key) const { return "kestrel/" + key; }

// Each rank says how large it thinks the job is; a rank that waits for ranks that never come, or that
// sees another count, says so instead of hanging in Gloo's full-mesh connect.
void ProcessGroup::check_world_sizes() {
  const std::string mine = std::to_string(world_.size);
  store_->set(scoped("world_size/" + std::to_string(world_.rank)), std::vector<uint8_t>(mine.begin(), mine.end()));
  std::vector<std::string> keys;
  for (int r = 0; r < world_.size; ++r) keys.push_back(scoped("world_size/" + std::to_string(r)));
  try {
    store_->wait(keys, timeout_);
  } catch (const std::exception& e) {
    std::string missing;
    try {
      for (int r = 0; r < world_.size; ++r)
        if (!store_->check({keys[r]})) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    } catch (const std::exception&) {  // the store itself is gone: rank 0 stopped
      throw std::runtime_error("the rendezvous at " + endpoint(world_) + " closed while rank " + std::to_string(world_.rank) +
                               " waited for the other ranks of WORLD_SIZE=" + mine + ": rank 0 stopped (see its error)");
    }
    throw std::runtime_error("rank " + std::to_string(world_.rank) + " waited " + seconds_text(timeout_) + " at " +
                             endpoint(world_) + " for rank(s) " + missing + " of WORLD_SIZE=" + mine +
                             ": were all processes started, with the same --nnodes/--nproc-per-node (WORLD_SIZE)? [" +
                             first_line(e) + "]");
  }
  for (int r = 0; r < world_.size; ++r) {
    const std::vector<uint8_t> v = store_->get(keys[r]);
    const std::string theirs(v.begin(), v.end());
    if (theirs != mine)
      throw std::runtime_error("rank " + std::to_string(r) + " was started with WORLD_SIZE=" + theirs + ", rank " +
                               std::to_string(world_.rank) + " with WORLD_SIZE=" + mine +
                               ": start every node with the same --nnodes and --nproc-per-node");
  }
}

PendingReduce ProcessGroup::all_reduce_async(std::vector<torch::Tensor>& tensors) {
  try {
    return PendingReduce(std::make_shared<c10::intrusive_ptr<c10d::Work>>(group_->allreduce(tensors)));
  } catch (const std::exception& e) {
    throw_collective_error("gradient all-reduce", e);
  }
}

// Collectives take dense tensors on the group's device: channels-last weights, or CPU flags for NCCL,
// travel through a copy that is written back.
void ProcessGroup::on_device(torch::Tensor& t, const std::function<void(std::vector<torch::Tensor>&)>& collective) {
  std::vector<torch::Tensor> v{t.device() == device_ && t.is_contiguous() ? t : t.to(device_).contiguous()};
  collective(v);
  if (!v[0].is_same(t)) t.copy_(v[0]);
}

void ProcessGroup::all_reduce_sum(torch::Tensor& t) {
  on_device(t, [&](std::vector<torch::Tensor>& v) { all_reduce_async(v).wait(); });
}

void ProcessGroup::all_reduce_max(torch::Tensor& t) {
  c10d::AllreduceOptions o;
  o.reduceOp = c10d::ReduceOp::MAX;
  on_device(t, [&](std::vector<torch::Tensor>& v) {
    try {
      group_->allreduce(v, o)->wait();
    } catch (const std::exception& e) {
      throw_collective_error("all-reduce", e);
    }
  });
}

void ProcessGroup::broadcast(std::vector<torch::Tensor>& tensors, int root) {
  c10d::BroadcastOptions o;
  o.rootRank = root;
  for (torch::Tensor& t : tensors)
    on_device(t, [&](std::vector<torch::Tensor>& v) {
      try {
        group_->broadcast(v, o)->wait();
      } catch (const std::exception& e) {
        throw_collective_error("broadcast", e);
      }
    });
}

void ProcessGroup::barrier() {
  try {
    group_->barrier()->wait();
  } catch (const std::exception& e) {
    throw_collective_error("waiting for the other ranks", e);
  }
}

std::string ProcessGroup::broadcast_text(const std::string& key, const std::string& text, int root) {
  const std::string k = scoped("text/" + std::to_string(text_calls_++) + "/" + key);
  try {
    if (world_.rank == root) store_->set(k, std::vector<uint8_t>(text.begin(), text.end()));
    const std::vector<uint8_t> v = store_->get(k);  // waits up to the timeout for root's value
    return std::string(v.begin(), v.end());
  } catch (const std::exception& e) {
    throw_collective_error(("receiving '" + key + "' from rank " + std::to_string(root)).c_str(), e);
  }
}

void ProcessGroup::check_same(const std::string& what, const std::string& fingerprint) {
  const std::string theirs = broadcast_text("same/" + what, fingerprint);
  const int differs = theirs != fingerprint;
  torch::Tensor any = torch::tensor({differs}, torch::kInt32);
  all_reduce_max(any);  // every rank learns whether some rank differs, so none waits for the others alone
  if (differs)
    throw std::runtime_error("rank " + std::to_string(world_.rank) + "'s " + what + " differ from rank 0's (" + fingerprint +
                             " vs " + theirs + "): start every rank with the same flags, data and files");
  if (any.item<int>())
    throw std::runtime_error("another rank's " + what + " differ from rank 0's (see its error): start every rank with the "
                             "same flags, data and files");
}

}  // namespace kestrel
