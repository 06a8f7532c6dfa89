// Environment checks for kestrel doctor.
#include "profile/doctor.h"

#include <dlfcn.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/cpu_cores.h"

namespace kestrel {

namespace {

double meminfo_gb(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string k, unit;
  double v;
  while (in >> k >> v >> unit)
    if (k == key + ":") return v / 1048576.0;
  return 0;
}

std::string fmt(const char* f, double a, double b = 0) {
  char buf[128];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}

// The driver's CUDA version (NVML's 13000 for 13.0) is older than the "13.0" LibTorch was built with:
// LibTorch's kernels cannot load.
bool driver_too_old(int driver_cuda, const std::string& built_cuda) {
  if (built_cuda.empty()) return false;
  const int major = std::atoi(built_cuda.c_str());
  const size_t dot = built_cuda.find('.');
  const int minor = dot == std::string::npos ? 0 : std::atoi(built_cuda.c_str() + dot + 1);
  return driver_cuda < major * 1000 + minor * 10;
}

// GPU facts through NVML (dlopen; absent means no NVIDIA driver).
void nvml_lines(std::vector<DoctorLine>& out, const std::string& built_cuda) {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    out.push_back({"GPU", "none: NVML (libnvidia-ml.so.1) not found, so no NVIDIA driver; training runs on the CPU", ""});
    return;
  }
  auto sym = [&](const char* n) { return dlsym(lib, n); };
  auto init = reinterpret_cast<int (*)()>(sym("nvmlInit_v2"));
  if (!init || init() != 0) {
    out.push_back({"GPU", "NVML present but failed to initialise", "driver/library mismatch? reboot or reinstall the driver"});
    dlclose(lib);
    return;
  }
  char buf[96] = {};
  if (auto f = reinterpret_cast<int (*)(char*, unsigned)>(sym("nvmlSystemGetDriverVersion")); f && f(buf, sizeof buf) == 0)
    out.push_back({"NVIDIA driver", buf, ""});
  int cuda = 0;
  if (auto f = reinterpret_cast<int (*)(int*)>(sym("nvmlSystemGetCudaDriverVersion")); f && f(&cuda) == 0)
    out.push_back({"CUDA (driver)", std::to_string(cuda / 1000) + "." + std::to_string(cuda % 1000 / 10),
                   driver_too_old(cuda, built_cuda) ? "LibTorch needs CUDA " + built_cuda + ": update the NVIDIA driver" : ""});
  unsigned n = 0;
  auto count = reinterpret_cast<int (*)(unsigned*)>(sym("nvmlDeviceGetCount_v2"));
  auto handle = reinterpret_cast<int (*)(unsigned, void**)>(sym("nvmlDeviceGetHandleByIndex_v2"));
  auto name = reinterpret_cast<int (*)(void*, char*, unsigned)>(sym("nvmlDeviceGetName"));
  struct Proc { unsigned pid; unsigned long long used; unsigned gi, ci; };
  auto procs = reinterpret_cast<int (*)(void*, unsigned*, Proc*)>(sym("nvmlDeviceGetComputeRunningProcesses"));
  auto throttle = reinterpret_cast<int (*)(void*, unsigned long long*)>(sym("nvmlDeviceGetCurrentClocksThrottleReasons"));
  if (count && count(&n) == 0) out.push_back({"GPUs visible", std::to_string(n), n == 0 ? "no GPU visible: check CUDA_VISIBLE_DEVICES" : ""});
  for (unsigned i = 0; handle && i < n; ++i) {
    void* dev = nullptr;
    if (handle(i, &dev) != 0) continue;
    std::string label = "GPU " + std::to_string(i);
    if (name && name(dev, buf, sizeof buf) == 0) out.push_back({label, buf, ""});
    if (procs) {
      Proc list[64];
      unsigned np = 64;
      if (procs(dev, &np, list) == 0) {
        std::string others;
        for (unsigned k = 0; k < np; ++k)
          if (list[k].pid != static_cast<unsigned>(getpid())) others += " " + std::to_string(list[k].pid);
        out.push_back({label + " other processes", others.empty() ? "none" : others,
                       others.empty() ? "" : "other processes share this GPU: they slow training; stop them or pick another --device"});
      }
    }
    unsigned long long reasons = 0;
    if (throttle && throttle(dev, &reasons) == 0) {
      const bool bad = reasons & (0x4ull | 0x8ull | 0x20ull | 0x40ull | 0x80ull);
      out.push_back({label + " throttling", bad ? "yes (reasons mask " + std::to_string(reasons) + ")" : "no",
                     bad ? "clocks are power/thermally limited: check cooling and `nvidia-smi -q -d PERFORMANCE`" : ""});
    }
  }
  if (auto shutdown = reinterpret_cast<int (*)()>(sym("nvmlShutdown"))) shutdown();
  dlclose(lib);
}

}  // namespace

std::string loaded_blas() {
  std::ifstream maps("/proc/self/maps");
  std::string line, found;
  while (std::getline(maps, line)) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    if (path.find("openblas") != std::string::npos || path.find("libblas.so") != std::string::npos ||
        path.find("libmkl") != std::string::npos || path.find("blis") != std::string::npos) {
      // Debian's alternatives put the real library behind libblas.so.3: resolve the link.
      std::error_code ec;
      const auto real = std::filesystem::canonical(path, ec);
      return ec ? path : real.string();
    }
  }
  return found;
}

std::string filesystem_type(const std::string& path, bool* network) {
  struct statfs fs {};
  *network = false;
  if (statfs(path.c_str(), &fs) != 0) return "unknown";
  static const std::map<long, std::pair<const char*, bool>> types = {
      {0xEF53, {"ext4", false}},        {0x58465342, {"xfs", false}},   {0x9123683E, {"btrfs", false}},
      {0x01021994, {"tmpfs", false}},   {0x794C7630, {"overlayfs", false}}, {0x6969, {"nfs", true}},
      {0x517B, {"smb", true}},          {(long)0xFF534D42, {"cifs", true}}, {(long)0xFE534D42, {"smb2", true}},
      {0x65735546, {"fuse", true}},     {0x01021997, {"9p", true}},     {0x5346414F, {"afs", true}},
      {0x47504653, {"gpfs", true}},     {0x0BD00BD0, {"lustre", true}}, {0x2FC12FC1, {"zfs", false}}};
  auto it = types.find(static_cast<long>(fs.f_type));
  if (it == types.end()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%lx", static_cast<unsigned long>(fs.f_type));
    return buf;
  }
  *network = it->second.second;
  return it->second.first;
}

std::vector<DoctorLine> run_doctor(const TorchFacts& torch, const std::string& data_path) {
  std::vector<DoctorLine> out;
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  const unsigned cores = usable_cores();
  // A job given part of a node (taskset, a scheduler's cpuset, a container's quota) sees only its share.
  out.push_back({"CPU cores", cores == online ? std::to_string(cores)
                                              : std::to_string(cores) + " usable of the machine's " + std::to_string(online) +
                                                    " (affinity mask or cgroup quota)", ""});
  const double total = meminfo_gb("MemTotal"), avail = meminfo_gb("MemAvailable");
  out.push_back({"memory", fmt("%.1f GB total, %.1f GB available", total, avail),
                 avail < 4 ? "little memory free: avoid --cache ram, use --cache disk" : ""});
  const double swap_total = meminfo_gb("SwapTotal"), swap_used = swap_total - meminfo_gb("SwapFree");
  out.push_back({"swap", fmt("%.1f GB total, %.2f GB in use", swap_total, swap_used),
                 swap_used > 0.1 ? "swap in use: training will stall on paging; free memory or use a smaller cache" : ""});

  const std::string where = data_path.empty() ? "." : data_path;
  struct statvfs vfs {};
  if (statvfs(where.c_str(), &vfs) == 0) {
    const double free_gb = double(vfs.f_bavail) * vfs.f_frsize / 1e9;
    out.push_back({"free disk (" + where + ")", fmt("%.1f GB", free_gb), free_gb < 5 ? "under 5 GB free: --cache disk and checkpoints may not fit" : ""});
  }
  bool network = false;
  const std::string fs = filesystem_type(where, &network);
  out.push_back({"file system (" + where + ")", fs,
                 network ? "data on a network file system: copy it to a local disk, pack it (kestrel pack) or use --cache" : ""});

  std::string built;
  for (const auto& [name, v] : {std::pair<const char*, std::string>{"CUDA ", torch.cuda}, {"cuDNN ", torch.cudnn}})
    if (!v.empty()) built += (built.empty() ? "" : ", ") + (name + v);
  out.push_back({"LibTorch", torch.version + (built.empty() ? " (CPU only)" : " (" + built + ")"), ""});
  // LibTorch's own default (often 1 with Debian's build); kestrel's commands set one per core.
  out.push_back({"compute threads", std::to_string(torch.intra_op_threads) + " by LibTorch's default; kestrel train/val use " + std::to_string(cores), ""});
  const char* wait = std::getenv("OMP_WAIT_POLICY");
  out.push_back({"OMP_WAIT_POLICY", wait ? wait : "(unset)",
                 wait && std::string(wait) == "PASSIVE" || wait && std::string(wait) == "passive" ? ""
                 : "spinning OpenMP threads steal cores from loader threads; kestrel sets PASSIVE itself, other tools may not"});
  const std::string blas = loaded_blas();
  const bool reference_blas = blas.find("/blas/") != std::string::npos || (blas.find("libblas") != std::string::npos && blas.find("openblas") == std::string::npos);
  out.push_back({"BLAS", blas.empty() ? "not loaded yet" : blas,
                 reference_blas ? "reference BLAS is slow: apt-get install libopenblas0-openmp" : ""});
  out.push_back({"CUDA in LibTorch", torch.cuda_available ? "yes, " + std::to_string(torch.cuda_devices) + " device(s)"
                                                       : torch.cuda.empty() ? "no: a CPU-only LibTorch" : "no GPU visible: training runs on the CPU", ""});
  nvml_lines(out, torch.cuda);
  return out;
}

std::string format_doctor(const std::vector<DoctorLine>& lines) {
  size_t w = 0;
  for (const auto& l : lines) w = std::max(w, l.key.size());
  std::ostringstream os;
  size_t warnings = 0;
  for (const auto& l : lines) {
    os << "  " << l.key << std::string(w - l.key.size() + 2, ' ') << l.value << "\n";
    if (!l.warning.empty()) {
      os << "  " << std::string(w + 2, ' ') << "WARNING: " << l.warning << "\n";
      ++warnings;
    }
  }
  os << (warnings ? std::to_string(warnings) + " warning(s)\n" : "no warnings\n");
  return os.str();
}

}  // namespace kestrel
