// Data-parallel environment checks (see doctor_dist.h).
#include "profile/doctor_dist.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

namespace kestrel {

std::string nccl_version() {
  void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return "";
  using GetVersion = int (*)(int*);
  auto get = reinterpret_cast<GetVersion>(dlsym(lib, "ncclGetVersion"));
  int v = 0;
  std::string out;
  if (get && get(&v) == 0) {
    // NCCL >= 2.9 encodes major*10000 + minor*100 + patch; older ones major*1000 + minor*100 + patch.
    const int major = v >= 10000 ? v / 10000 : v / 1000, minor = v >= 10000 ? v / 100 % 100 : v / 100 % 10;
    out = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
  }
  dlclose(lib);
  return out;
}

bool tcp_port_free(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
}

std::string ipv4_interfaces() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string out;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, ip, sizeof ip);
    out += (out.empty() ? "" : ", ") + std::string(i->ifa_name) + " " + ip;
  }
  freeifaddrs(list);
  return out;
}

std::vector<DoctorLine> data_parallel_lines(const DistDoctorInput& in) {
  std::vector<DoctorLine> out;
  out.push_back({"c10d Gloo (CPU)", in.gloo_version.empty() ? "not in this LibTorch" : "yes, Gloo " + in.gloo_version,
                 in.gloo_version.empty() ? "this LibTorch cannot train on several processes: use one built with distributed support" : ""});
  const std::string nccl = nccl_version();
  out.push_back({"NCCL (GPU)", nccl.empty() ? "libnccl.so.2 not found" : nccl,
                 in.cuda && nccl.empty() ? "several GPUs need NCCL: install libnccl2 matching your CUDA" : ""});
  const std::string ifaces = ipv4_interfaces();
  const bool loopback_only = ifaces.find(',') == std::string::npos;
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  out.push_back({"network interfaces", ifaces.empty() ? "none found" : ifaces,
                 loopback_only ? "only loopback: this machine can run several processes, not join other machines" : ""});
  if (ifname && *ifname) out.push_back({"GLOO_SOCKET_IFNAME", ifname, ifaces.find(std::string(ifname) + " ") == std::string::npos ? "no such interface is up" : ""});
  const bool port_free = tcp_port_free(in.master_port);
  out.push_back({"master port " + std::to_string(in.master_port), port_free ? "free" : "in use",
                 port_free ? "" : "another program listens there: rank 0 cannot host the rendezvous; pick another --master-port"});
  if (in.processes > 1 && !in.data_path.empty()) {
    bool network = false;
    const std::string fs = filesystem_type(in.data_path, &network);
    out.push_back({"data for " + std::to_string(in.processes) + " processes", in.data_path + " on " + fs,
                   network ? "every rank reads this network file system each epoch: copy the data to each machine's disk, "
                             "or --cache disk (one file per machine) / --cache ram"
                           : ""});
  }
  return out;
}

}  // namespace kestrel
