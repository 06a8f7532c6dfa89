// usable_cores(): the affinity mask's CPU count, capped by the cgroup quota (v2 cpu.max, or v1's
// cfs_quota_us / cfs_period_us). Read once: neither changes under a running process in practice.
#include "core/cpu_cores.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

namespace kestrel {
namespace {

unsigned affinity_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return static_cast<unsigned>(CPU_COUNT(&set));
  return std::thread::hardware_concurrency();
}

std::optional<unsigned> cores_from_quota(double quota, double period) {
  if (quota <= 0 || period <= 0) return std::nullopt;
  return static_cast<unsigned>(std::max(1.0, std::ceil(quota / period)));
}

std::optional<unsigned> cgroup_quota_cores() {
  std::string line;
  if (std::ifstream v2("/sys/fs/cgroup/cpu.max"); v2 && std::getline(v2, line)) return cores_from_cpu_max(line);
  std::ifstream quota("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), period("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  double q = -1, p = 0;
  if (quota >> q && period >> p) return cores_from_quota(q, p);
  return std::nullopt;
}

}  // namespace

std::optional<unsigned> cores_from_cpu_max(const std::string& line) {
  std::istringstream in(line);
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || quota == "max") return std::nullopt;
  try {
    return cores_from_quota(std::stod(quota), period);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

unsigned usable_cores() {
  static const unsigned cores = [] {
    unsigned n = std::max(1u, affinity_cores());
    if (auto quota = cgroup_quota_cores()) n = std::min(n, *quota);
    return n;
  }();
  return cores;
}

}  // namespace kestrel
