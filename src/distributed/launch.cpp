// The self-launcher: fork/exec of the node's ranks, and their supervision.
#include "distributed/launch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <thread>

namespace kestrel {

namespace {

int exit_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::string describe(int status) {
  if (WIFSIGNALED(status)) return std::string("was killed by signal ") + std::to_string(WTERMSIG(status));
  return "exited with status " + std::to_string(exit_status(status));
}

pid_t start_rank(const std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string>>& env) {
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("could not start a rank: fork failed");
  if (pid > 0) return pid;
  for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv("/proc/self/exe", argv.data());
  std::perror("kestrel: could not start a rank");
  _exit(127);
}

}  // namespace

int device_list_size(const std::string& device) {
  return static_cast<int>(std::count(device.begin(), device.end(), ',')) + 1;
}

std::string rank_device(const std::string& device, int local_rank) {
  const int n = device_list_size(device);
  if (n == 1) return device;
  if (local_rank >= n)
    throw std::runtime_error("--device " + device + " lists " + std::to_string(n) + " devices, but this is local rank " +
                             std::to_string(local_rank) + ": list one device per process of the machine");
  size_t start = 0;
  for (int i = 0; i < local_rank; ++i) start = device.find(',', start) + 1;
  const size_t end = device.find(',', start);
  return device.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

bool should_launch(const LaunchOptions& o) {
  const char* ws = std::getenv("WORLD_SIZE");
  return o.nproc_per_node * o.nnodes > 1 && !(ws && *ws);
}

void check_launch_options(const LaunchOptions& o) {
  if (o.nproc_per_node < 1) throw std::runtime_error("--nproc-per-node " + std::to_string(o.nproc_per_node) + ": give 1 or more");
  if (o.nnodes < 1) throw std::runtime_error("--nnodes " + std::to_string(o.nnodes) + ": give 1 or more");
  if (o.node_rank < 0 || o.node_rank >= o.nnodes)
    throw std::runtime_error("--node-rank " + std::to_string(o.node_rank) + " must be 0.." + std::to_string(o.nnodes - 1) +
                             " for --nnodes " + std::to_string(o.nnodes));
  if (o.master_port < 1 || o.master_port > 65535)
    throw std::runtime_error("--master-port " + std::to_string(o.master_port) + " is not a TCP port");
  if (o.nnodes > 1 && o.master_addr.empty()) throw std::runtime_error("--nnodes > 1 needs --master-addr (node 0's address)");
}

std::vector<std::pair<std::string, std::string>> rank_environment(const LaunchOptions& o, int local_rank) {
  const int world = o.nproc_per_node * o.nnodes, rank = o.node_rank * o.nproc_per_node + local_rank;
  return {{"RANK", std::to_string(rank)},
          {"LOCAL_RANK", std::to_string(local_rank)},
          {"WORLD_SIZE", std::to_string(world)},
          {"LOCAL_WORLD_SIZE", std::to_string(o.nproc_per_node)},
          {"GROUP_RANK", std::to_string(o.node_rank)},
          {"MASTER_ADDR", o.master_addr},
          {"MASTER_PORT", std::to_string(o.master_port)},
          {"TORCHELASTIC_RESTART_COUNT", "0"}};
}

std::vector<std::string> own_arguments() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t start = 0; start < all.size();) {
    const size_t end = all.find('\0', start);
    args.push_back(all.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return args;
}

int launch_local_ranks(const LaunchOptions& o, const std::vector<std::string>& args) {
  check_launch_options(o);
  std::printf("Launching %d process(es) on node %d of %d (world size %d, master %s:%d)\n", o.nproc_per_node, o.node_rank,
              o.nnodes, o.nproc_per_node * o.nnodes, o.master_addr.c_str(), o.master_port);
  std::fflush(stdout);
  // Ctrl-C goes to the whole foreground group: the ranks save and exit; the launcher waits for them.
  struct sigaction ignore {}, old_int {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  std::map<pid_t, int> running;  // pid -> rank
  for (int i = 0; i < o.nproc_per_node; ++i)
    running[start_rank(args, rank_environment(o, i))] = o.node_rank * o.nproc_per_node + i;
  int result = 0;
  auto failed_at = std::chrono::steady_clock::time_point::max();
  bool terminated = false;
  while (!running.empty()) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0 && running.count(pid)) {
      const int rank = running[pid];
      running.erase(pid);
      if (exit_status(status) != 0 && result == 0) {
        result = exit_status(status);
        if (result != 130)  // an interrupted rank is no failure of the job: the others are stopping too
          std::fprintf(stderr, "kestrel: rank %d (pid %d) %s: stopping the job\n", rank, static_cast<int>(pid),
                       describe(status).c_str());
        failed_at = std::chrono::steady_clock::now();
      }
      continue;
    }
    if (!terminated && std::chrono::steady_clock::now() - failed_at > std::chrono::duration<double>(o.stop_grace_seconds)) {
      for (const auto& [p, r] : running) kill(p, SIGTERM);
      terminated = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  sigaction(SIGINT, &old_int, nullptr);
  return result;
}

}  // namespace kestrel
