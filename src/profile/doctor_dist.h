// kestrel doctor's data-parallel checks: the c10d backends (Gloo in LibTorch, NCCL's library and
// version), the network interfaces the ranks could talk over and the one MASTER_ADDR is reached
// through, whether the master port is free, and a data folder on a network file system that every
// rank would read. Torch-free: the front end says which backends its LibTorch has.
#pragma once
#include <string>
#include <vector>

#include "profile/doctor.h"

namespace kestrel {

struct DistDoctorInput {
  std::string gloo_version;      // "" when LibTorch has no Gloo
  bool cuda = false;             // NCCL matters only with GPUs
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int processes = 1;             // ranks that would read data_path
  std::string data_path;
};

std::vector<DoctorLine> data_parallel_lines(const DistDoctorInput& in);

// NCCL's version from its library ("2.18.3"), or "" when libnccl.so.2 cannot be loaded.
std::string nccl_version();
// Whether a TCP port can be bound on this machine now (false: something listens there).
bool tcp_port_free(int port);
// "lo 127.0.0.1, eth0 10.0.0.4": the IPv4 interfaces that are up.
std::string ipv4_interfaces();

}  // namespace kestrel
