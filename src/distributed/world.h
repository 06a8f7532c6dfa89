// Where this process stands in a data-parallel job, read from torchrun's environment (RANK,
// LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT,
// TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_USE_AGENT_STORE). `kestrel train --nproc-per-node` and
// `--device 0,1` set the same variables for the processes they start (dist/launch.h).
// Torch-free.
#pragma once
#include <functional>
#include <string>

namespace kestrel {

struct World {
  int rank = 0, local_rank = 0, size = 1, local_size = 1, node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int restart_count = 0;     // torchrun --max-restarts: how many times the job was restarted
  bool agent_store = false;  // torchrun's agent hosts the store, so rank 0 connects to it as a client
  bool distributed() const { return size > 1; }
  bool main() const { return rank == 0; }
};

// Reads the variables through `env` (getenv in use, a map in tests). No RANK or WORLD_SIZE: a single
// process. Throws std::runtime_error naming the variable when one is malformed or inconsistent.
using EnvLookup = std::function<const char*(const char*)>;
World world_from_env(const EnvLookup& env);
World world_from_env();

}  // namespace kestrel
