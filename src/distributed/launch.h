// `kestrel train --nproc-per-node N` (and --device 0,1,..., --nnodes/--node-rank/--master-addr/
// --master-port): Kestrel starts the processes of a data-parallel job itself, as torchrun does, for
// users without Python. Each child is this executable with the same arguments and torchrun's
// variables (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT);
// seeing them, a child trains instead of launching. Torch-free.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace kestrel {

struct LaunchOptions {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  double stop_grace_seconds = 10;  // after a rank fails: time the others get to stop with their own message
};

// --device 0,1,2,3 as YOLOv5 users type it: one process per listed GPU. device_list_size gives the
// count (1 without a comma); rank_device the entry of a local rank ("cpu" and "0" pass through).
int device_list_size(const std::string& device);
std::string rank_device(const std::string& device, int local_rank);

// More than one process asked for, and this process is not already a rank of a job.
bool should_launch(const LaunchOptions& o);
// Checks the numbers (node rank below nnodes, a TCP port...): std::runtime_error naming the flag.
void check_launch_options(const LaunchOptions& o);
// torchrun's variables for local rank i of this node.
std::vector<std::pair<std::string, std::string>> rank_environment(const LaunchOptions& o, int local_rank);
// This process's command line (/proc/self/cmdline).
std::vector<std::string> own_arguments();
// Starts the node's ranks and waits for them. Ctrl-C reaches the ranks directly (same process group)
// and they save last.pt; a rank that fails stops the job: the others get stop_grace_seconds to exit
// on their own error (a lost peer), then SIGTERM. Returns 0, or the first failure's exit status
// (128 + signal for a killed rank).
int launch_local_ranks(const LaunchOptions& o, const std::vector<std::string>& args);

}  // namespace kestrel
