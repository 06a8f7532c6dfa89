// System sampler: /proc readings on a background thread, NVML through dlopen.
#include "profile/system_sampler.h"

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kestrel {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// utime + stime (clock ticks) from a /proc/.../stat line; the comm field may contain spaces.
unsigned long long stat_ticks(const std::string& path, std::string* comm = nullptr) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return 0;
  const size_t open = line.find('('), close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos) return 0;
  if (comm) *comm = line.substr(open + 1, close - open - 1);
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return utime + stime;
}

void machine_ticks(unsigned long long* busy, unsigned long long* total) {
  std::ifstream in("/proc/stat");
  std::string cpu;
  unsigned long long v[10] = {};
  in >> cpu;
  for (auto& x : v) in >> x;
  *total = 0;
  for (auto x : v) *total += x;
  *busy = *total - v[3] - v[4];  // minus idle and iowait
}

double meminfo_kb(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string k;
  double v;
  std::string unit;
  while (in >> k >> v >> unit)
    if (k == key + ":") return v;
  return 0;
}

unsigned long long read_bytes() {
  std::ifstream in("/proc/self/io");
  std::string k;
  unsigned long long v;
  while (in >> k >> v)
    if (k == "read_bytes:") return v;
  return 0;
}

}  // namespace

// The few NVML entry points we use, declared by hand so no CUDA headers are needed.
struct SystemSampler::Nvml {
  using Dev = void*;
  struct Util { unsigned gpu, memory; };
  struct Mem { unsigned long long total, free, used; };
  void* lib = nullptr;
  Dev dev = nullptr;
  int (*get_util)(Dev, Util*) = nullptr;
  int (*get_mem)(Dev, Mem*) = nullptr;
  int (*get_power)(Dev, unsigned*) = nullptr;
  int (*get_power_limit)(Dev, unsigned*) = nullptr;
  int (*get_clock)(Dev, int, unsigned*) = nullptr;
  int (*get_temp)(Dev, int, unsigned*) = nullptr;
  int (*get_throttle)(Dev, unsigned long long*) = nullptr;
  int (*by_bus_id)(const char*, Dev*) = nullptr;

  static Nvml* open(std::string* status) {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      *status = "NVML not found (no NVIDIA driver): GPU sampling off";
      return nullptr;
    }
    auto sym = [&](const char* n) { return dlsym(lib, n); };
    auto init = reinterpret_cast<int (*)()>(sym("nvmlInit_v2"));
    auto count = reinterpret_cast<int (*)(unsigned*)>(sym("nvmlDeviceGetCount_v2"));
    auto handle = reinterpret_cast<int (*)(unsigned, Dev*)>(sym("nvmlDeviceGetHandleByIndex_v2"));
    unsigned n = 0;
    auto* g = new Nvml;
    g->lib = lib;
    if (!init || !count || !handle || init() != 0 || count(&n) != 0 || n == 0 || handle(0, &g->dev) != 0) {
      *status = "NVML present but no GPU visible";
      dlclose(lib);
      delete g;
      return nullptr;
    }
    g->get_util = reinterpret_cast<decltype(g->get_util)>(sym("nvmlDeviceGetUtilizationRates"));
    g->get_mem = reinterpret_cast<decltype(g->get_mem)>(sym("nvmlDeviceGetMemoryInfo"));
    g->get_power = reinterpret_cast<decltype(g->get_power)>(sym("nvmlDeviceGetPowerUsage"));
    g->get_power_limit = reinterpret_cast<decltype(g->get_power_limit)>(sym("nvmlDeviceGetEnforcedPowerLimit"));
    g->get_clock = reinterpret_cast<decltype(g->get_clock)>(sym("nvmlDeviceGetClockInfo"));
    g->get_temp = reinterpret_cast<decltype(g->get_temp)>(sym("nvmlDeviceGetTemperature"));
    g->get_throttle = reinterpret_cast<decltype(g->get_throttle)>(sym("nvmlDeviceGetCurrentClocksThrottleReasons"));
    g->by_bus_id = reinterpret_cast<decltype(g->by_bus_id)>(sym("nvmlDeviceGetHandleByPciBusId_v2"));
    *status = std::to_string(n) + " GPU(s) visible to NVML; sampling GPU 0";
    return g;
  }

  void fill(SystemSample& s) const {
    s.has_gpu = true;
    Util u{};
    if (get_util && get_util(dev, &u) == 0) s.gpu_util = u.gpu / 100.0;
    Mem m{};
    if (get_mem && get_mem(dev, &m) == 0) s.gpu_mem_used_mb = m.used / 1048576.0;
    unsigned v = 0;
    if (get_power && get_power(dev, &v) == 0) s.gpu_power_w = v / 1000.0;
    if (get_power_limit && get_power_limit(dev, &v) == 0) s.gpu_power_limit_w = v / 1000.0;
    if (get_clock && get_clock(dev, 1 /*NVML_CLOCK_SM*/, &v) == 0) s.gpu_sm_clock_mhz = v;
    if (get_temp && get_temp(dev, 0 /*NVML_TEMPERATURE_GPU*/, &v) == 0) s.gpu_temp_c = v;
    if (get_throttle) get_throttle(dev, &s.gpu_throttle_reasons);
  }
};

void set_current_thread_name(const std::string& name) { pthread_setname_np(pthread_self(), name.substr(0, 15).c_str()); }

SystemSampler::SystemSampler(double interval_s) : interval_s_(interval_s), cores_(static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN))) {
  nvml_ = Nvml::open(&gpu_status_);
}

void SystemSampler::select_gpu(const std::string& pci_bus_id) {
  if (!nvml_ || !nvml_->by_bus_id || pci_bus_id.empty()) return;
  Nvml::Dev dev{};
  if (nvml_->by_bus_id(pci_bus_id.c_str(), &dev) != 0) return;
  nvml_->dev = dev;
  gpu_status_ = "sampling the run's GPU " + pci_bus_id;
}

SystemSampler::~SystemSampler() {
  stop();
  if (nvml_) {
    if (auto shutdown = reinterpret_cast<int (*)()>(dlsym(nvml_->lib, "nvmlShutdown"))) shutdown();
    dlclose(nvml_->lib);
    delete nvml_;
  }
}

void SystemSampler::start() {
  if (running_.exchange(true)) return;
  t0_ = prev_t_ = now_s();
  prev_proc_ticks_ = stat_ticks("/proc/self/stat");
  machine_ticks(&prev_machine_busy_, &prev_machine_total_);
  prev_read_bytes_ = read_bytes();
  take();  // primes per-thread counters
  thread_ = std::thread([this] {
    set_current_thread_name("kestrel-sample");
    loop();
  });
}

void SystemSampler::stop() {
  if (!running_.exchange(false)) return;
  if (thread_.joinable()) thread_.join();
}

void SystemSampler::loop() {
  while (running_) {
    const double until = now_s() + interval_s_;
    while (running_ && now_s() < until) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!running_) break;
    sample_now();
  }
}

void SystemSampler::sample_now() {
  std::lock_guard<std::mutex> lock(mu_);  // take() moves the previous readings on
  // CPU time comes in 10 ms ticks: a reading over less than 0.1 s would be mostly rounding.
  if (running_ && now_s() - prev_t_ >= std::min(0.1, interval_s_)) samples_.push_back(take());
}

SystemSample SystemSampler::take() {
  SystemSample s;
  const double t = now_s();
  const double dt = std::max(t - prev_t_, 1e-6);
  const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  s.t = t - t0_;

  const unsigned long long proc = stat_ticks("/proc/self/stat");
  s.process_cpu = (proc - prev_proc_ticks_) / hz / dt;

  unsigned long long loader = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::string comm;
      const unsigned long long ticks = stat_ticks(std::string("/proc/self/task/") + e->d_name + "/stat", &comm);
      if (comm.rfind("kestrel-load", 0) == 0) loader += ticks;
    }
    closedir(d);
  }
  // Loader threads may come and go; a negative delta means some exited, count it as zero.
  s.loader_cpu = loader >= prev_loader_ticks_ ? (loader - prev_loader_ticks_) / hz / dt : 0.0;
  s.compute_cpu = std::max(0.0, s.process_cpu - s.loader_cpu);

  unsigned long long busy, total;
  machine_ticks(&busy, &total);
  s.machine_cpu = total > prev_machine_total_ ? double(busy - prev_machine_busy_) / double(total - prev_machine_total_) : 0;

  std::ifstream statm("/proc/self/statm");
  double pages_total = 0, pages_rss = 0;
  statm >> pages_total >> pages_rss;
  s.rss_mb = pages_rss * sysconf(_SC_PAGESIZE) / 1048576.0;
  s.swap_used_mb = (meminfo_kb("SwapTotal") - meminfo_kb("SwapFree")) / 1024.0;
  const unsigned long long rb = read_bytes();
  s.disk_read_mb_s = (rb - prev_read_bytes_) / 1048576.0 / dt;
  if (nvml_) nvml_->fill(s);

  prev_t_ = t;
  prev_proc_ticks_ = proc;
  prev_loader_ticks_ = loader;
  prev_machine_busy_ = busy;
  prev_machine_total_ = total;
  prev_read_bytes_ = rb;
  return s;
}

size_t SystemSampler::samples_taken() const {
  std::lock_guard<std::mutex> lock(mu_);
  return samples_.size();
}

std::vector<SystemSample> SystemSampler::samples() const {
  std::lock_guard<std::mutex> lock(mu_);
  return samples_;
}

SystemSummary SystemSampler::summarize(size_t from) const {
  std::lock_guard<std::mutex> lock(mu_);
  SystemSummary m;
  for (size_t i = from; i < samples_.size(); ++i) {
    const SystemSample& s = samples_[i];
    ++m.samples;
    m.process_cpu += s.process_cpu;
    m.machine_cpu += s.machine_cpu;
    m.loader_cpu += s.loader_cpu;
    m.compute_cpu += s.compute_cpu;
    m.disk_read_mb_s += s.disk_read_mb_s;
    m.rss_mb_max = std::max(m.rss_mb_max, s.rss_mb);
    m.swap_used_mb_max = std::max(m.swap_used_mb_max, s.swap_used_mb);
    if (s.has_gpu) {
      m.has_gpu = true;
      m.gpu_util += s.gpu_util;
      m.gpu_power_w += s.gpu_power_w;
      m.gpu_power_limit_w = s.gpu_power_limit_w;
      m.gpu_sm_clock_mhz += s.gpu_sm_clock_mhz;
      m.gpu_temp_c_max = std::max(m.gpu_temp_c_max, s.gpu_temp_c);
      // SW power cap, HW slowdown, SW/HW thermal, HW power brake
      if (s.gpu_throttle_reasons & (0x4ull | 0x8ull | 0x20ull | 0x40ull | 0x80ull)) m.gpu_throttled = true;
    }
  }
  if (m.samples) {
    const double n = static_cast<double>(m.samples);
    m.process_cpu /= n, m.machine_cpu /= n, m.loader_cpu /= n, m.compute_cpu /= n, m.disk_read_mb_s /= n;
    m.gpu_util /= n, m.gpu_power_w /= n, m.gpu_sm_clock_mhz /= n;
  }
  return m;
}

}  // namespace kestrel
