// Background sampling of the machine while a run trains: process and machine CPU utilisation,
// per-thread CPU of loader threads vs compute threads (by thread name), RSS, swap in use and the
// process's disk read rate, from /proc; on CUDA machines GPU utilisation, memory, power, SM clock,
// temperature and throttle reasons through NVML, loaded at run time (dlopen) when present.
#pragma once
#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kestrel {

struct SystemSample {
  double t = 0;                    // seconds since the sampler started
  double process_cpu = 0;          // cores busy in this process (0..ncores)
  double machine_cpu = 0;          // fraction of all cores busy, whole machine (0..1)
  double loader_cpu = 0;           // cores busy in threads named kestrel-load*
  double compute_cpu = 0;          // cores busy in the other threads of this process
  double rss_mb = 0, swap_used_mb = 0, disk_read_mb_s = 0;
  bool has_gpu = false;
  double gpu_util = 0, gpu_mem_used_mb = 0, gpu_power_w = 0, gpu_power_limit_w = 0, gpu_sm_clock_mhz = 0,
         gpu_temp_c = 0;
  unsigned long long gpu_throttle_reasons = 0;  // NVML clocks-throttle-reason bit mask
};

// Averages over a window of samples (an epoch or a whole run).
struct SystemSummary {
  size_t samples = 0;
  double process_cpu = 0, machine_cpu = 0, loader_cpu = 0, compute_cpu = 0;
  double rss_mb_max = 0, swap_used_mb_max = 0, disk_read_mb_s = 0;
  bool has_gpu = false;
  double gpu_util = 0, gpu_power_w = 0, gpu_power_limit_w = 0, gpu_sm_clock_mhz = 0, gpu_temp_c_max = 0;
  bool gpu_throttled = false;  // power or thermal throttling seen in any sample
};

class SystemSampler {
 public:
  explicit SystemSampler(double interval_s = 0.5);
  ~SystemSampler();
  // Samples the GPU with this PCI bus id ("0000:3B:00.0": the run's device; NVML counts every GPU of
  // the machine, CUDA only the visible ones); GPU 0 until called. Before start().
  void select_gpu(const std::string& pci_bus_id);
  void start();
  void stop();
  // One reading now, over the time since the last (unless under 0.1 s): a run shorter than the
  // interval still gets one.
  void sample_now();
  // Samples taken since index `from` (use samples_taken() to remember an epoch's start).
  SystemSummary summarize(size_t from = 0) const;
  size_t samples_taken() const;
  std::vector<SystemSample> samples() const;
  const std::string& gpu_status() const { return gpu_status_; }  // "NVML not found", "1 GPU", ...
  int cores() const { return cores_; }

 private:
  void loop();
  SystemSample take();
  double interval_s_;
  int cores_;
  std::atomic<bool> running_{false};
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<SystemSample> samples_;
  std::string gpu_status_;
  // previous readings for rates
  double t0_ = 0, prev_t_ = 0;
  unsigned long long prev_proc_ticks_ = 0, prev_machine_busy_ = 0, prev_machine_total_ = 0;
  unsigned long long prev_loader_ticks_ = 0, prev_read_bytes_ = 0;
  struct Nvml;
  Nvml* nvml_ = nullptr;
};

// Names the calling thread (visible in /proc, top -H and the sampler's loader/compute split).
void set_current_thread_name(const std::string& name);

}  // namespace kestrel
