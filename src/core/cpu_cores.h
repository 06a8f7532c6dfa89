// How many cores this process may use: the CPUs of its affinity mask (taskset, a batch scheduler's
// cpuset), further capped by a cgroup CPU quota (docker --cpus, Kubernetes limits). Every default that
// says "one per core" (compute threads, loader workers, scan and pack threads) reads this, not
// std::thread::hardware_concurrency(), which counts the whole machine: on a 64-core node where a job was
// given 8 cores, 64 threads would fight over 8.
#pragma once
#include <optional>
#include <string>

namespace kestrel {

unsigned usable_cores();

// The cores a cgroup v2 cpu.max line ("200000 100000", or "max 100000" for no limit) allows, rounded
// up; nullopt for no limit or a line it cannot read.
std::optional<unsigned> cores_from_cpu_max(const std::string& line);

}  // namespace kestrel
