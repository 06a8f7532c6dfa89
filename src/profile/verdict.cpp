// Verdict rules. Thresholds: a step waiting > 5% on data is not compute-bound (the loader target is
// < 3%); a CPU is "saturated" above 85% of its cores; swap above 64 MB means the cache or prefetch
// is pushing the machine out of memory; on a CPU-only run, loader threads taking over 10% of the
// process's CPU without a cache are decoding on the cores the model computes on.
#include "profile/verdict.h"

#include <cstdio>

namespace kestrel {

const char* bound_name(Bound b) {
  switch (b) {
    case Bound::compute: return "compute-bound";
    case Bound::data: return "data-bound";
    case Bound::io: return "I/O-bound";
    case Bound::memory: return "memory-bound";
    case Bound::communication: return "communication-bound";
    case Bound::power: return "power/thermal-bound";
    case Bound::host: return "host-bound";
  }
  return "?";
}

namespace {
std::string pct(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f%%", 100 * x);
  return b;
}
}  // namespace

Verdict judge(const VerdictInput& in) {
  const double wait = in.steps.share(StepStage::data_wait);
  const SystemSummary& s = in.system;
  const bool cpu_saturated = s.machine_cpu > 0.85;
  const bool loader_busy = in.loader_workers > 0 && s.loader_cpu > 0.7 * in.loader_workers;
  Verdict v;
  if (s.swap_used_mb_max > 64) {
    v.bound = Bound::memory;
    v.summary = "memory-bound: " + std::to_string(static_cast<int>(s.swap_used_mb_max)) + " MB of swap in use";
    v.action = "use a smaller cache (--cache disk instead of ram) or fewer prefetched batches (--prefetch)";
    return v;
  }
  if (in.gpu && s.gpu_throttled) {
    v.bound = Bound::power;
    v.summary = "power/thermal-bound: the GPU throttled its clocks (" + std::to_string(static_cast<int>(s.gpu_temp_c_max)) + " C max)";
    v.action = "check cooling and power limits (nvidia-smi -q -d PERFORMANCE); kestrel doctor shows throttle reasons";
    return v;
  }
  const double comm = in.steps.share(StepStage::communication);
  if (in.processes > 1 && comm > 0.2 && comm > wait) {
    v.bound = Bound::communication;
    v.summary = "communication-bound: each step waited " + pct(comm) + " for the gradient all-reduce of " +
                std::to_string(in.processes) + " processes";
    v.action = in.gpu ? "use fewer, larger-batch processes, a faster interconnect (NCCL over NVLink/InfiniBand), or --nbs "
                        "accumulation so gradients are exchanged less often"
                      : "use fewer processes with more threads each (--nproc-per-node), a larger --batch-size, or "
                        "accumulation (--nbs) so gradients are exchanged less often";
    return v;
  }
  const bool accel_busy = in.gpu ? s.gpu_util > 0.9 : wait < 0.05;
  if (accel_busy) {
    v.bound = Bound::compute;
    v.summary = "compute-bound: the model waited " + pct(wait) + " of each step for data";
    v.action = in.gpu ? "train in mixed precision (--amp fp16 or bf16) if you do not, let cuDNN pick its fastest kernels "
                        "(--fast), use a smaller model or image size, or more GPUs (--device 0,1,...)"
                      : "use a smaller model or image size, or train on a GPU";
    if (!in.gpu && !in.images_cached && s.process_cpu > 0 && s.loader_cpu > 0.1 * s.process_cpu)
      v.action = "use --cache ram (or --cache disk): the loader threads took " + pct(s.loader_cpu / s.process_cpu) +
                 " of the CPU decoding images, on the cores the model computes on; a cache decodes each image once";
    return v;
  }
  if (in.gpu && s.has_gpu && wait < 0.05) {
    v.bound = Bound::host;
    v.summary = "host-bound: the GPU was busy " + pct(s.gpu_util) + " of the time while each step waited only " + pct(wait) +
                " for data: the host's own work per step (launching kernels, reading the loss back) is the limit";
    v.action = "use a larger --batch-size (more work per kernel launch), or --fast; `kestrel profile` shows the GPU's time "
               "per stage against the step's";
    return v;
  }
  const std::string stage = in.largest_loader_stage.empty() ? "" : "; " + in.largest_loader_stage + " is the largest loader stage";
  if (cpu_saturated || loader_busy) {
    v.bound = Bound::data;
    v.summary = "data-bound: the model waited " + pct(wait) + " of each step" + stage;
    v.action = "try --cache ram (or --cache disk), lighter augmentation, or more --workers if cores are free";
    return v;
  }
  v.bound = Bound::io;
  v.summary = "I/O-bound: the model waited " + pct(wait) + " of each step while CPUs were " + pct(s.machine_cpu) + " busy";
  v.action = "move the data to a local disk, pack it (kestrel pack), or cache it (--cache ram|disk)";
  return v;
}

}  // namespace kestrel
