// Synthetic training steps, timed by stage (see step_bench.h).
#include "train/step_bench.h"

#include <c10/cuda/CUDACachingAllocator.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <malloc.h>
#include <string>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/cuda.h>

#include "core/cpu_cores.h"
#include "core/sample_stats.h"
#include "device/device.h"
#include "distributed/launch.h"
#include "model/model_info.h"
#include "model/weights.h"
#include "train/loss.h"
#include "train/optimizer.h"

namespace kestrel {

namespace {

// VmHWM of this process in bytes, after resetting it when `reset` (Linux: "5" > /proc/self/clear_refs).
double peak_rss_bytes(bool reset) {
  if (reset) std::ofstream("/proc/self/clear_refs") << "5";
  std::ifstream in("/proc/self/status");
  std::string key;
  double kb = 0;
  while (in >> key)
    if (key == "VmHWM:") return (in >> kb) ? kb * 1024 : 0;
  return 0;
}

// A batch as the loader would give it (pixels in 0..1, in the measured layout) with four boxes per image,
// drawn from a generator of its own: measuring never moves the run's random stream.
std::pair<torch::Tensor, torch::Tensor> synthetic_batch(const StepBenchOptions& o, int nc) {
  at::Generator gen = at::detail::createCPUGenerator(0);
  const torch::Tensor images = torch::rand({o.batch_size, 3, o.img_size, o.img_size}, gen)
                                   .contiguous(o.memory_format).to(o.device);
  const int64_t n = 4 * o.batch_size;
  torch::Tensor t = torch::empty({n, 6});
  t.select(1, 0).copy_(torch::arange(n) / 4);
  t.select(1, 1).copy_(torch::randint(nc, {n}, gen));
  t.slice(1, 2, 4).uniform_(0.2, 0.8, gen);
  t.slice(1, 4, 6).uniform_(0.05, 0.3, gen);
  return {images, t.to(o.device)};
}

struct Clock {
  torch::Device device;
  std::chrono::steady_clock::time_point t = std::chrono::steady_clock::now();
  double lap_ms() {  // since the previous lap, the device's queue drained first
    if (device.is_cuda()) torch::cuda::synchronize();
    const auto now = std::chrono::steady_clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - t).count();
    t = now;
    return ms;
  }
};

}  // namespace

StepRunner::StepRunner(const DetectionModelImpl& source, const StepBenchOptions& o)
    : o_(o), model_(source.copy()) {
  check_precision_supported(o.precision, o.device);
  model_->to(o.device);
  model_->set_memory_format(o.memory_format);  // channels-last unless asked: as the trainer runs it
  model_->train();
  optimizer_ = smart_optimizer(*model_, OptimizerKind::SGD, o.hyp.lr0, o.hyp.momentum, o.hyp.weight_decay);
  if (o.dp) o.dp->sync_gradients_of(model_->parameters(), o.grad_sync);
  loss_ = make_detection_loss(*model_, o.hyp, o.img_size, o.device);
  std::tie(images_, targets_) = synthetic_batch(o, static_cast<int>(model_->nc()));
}

StepRunner::~StepRunner() = default;

StepTimes StepRunner::step(Precision precision) {
  StepTimes t;
  Clock clock{o_.device};
  std::vector<torch::Tensor> pred;
  {
    Autocast autocast(precision, o_.device);
    pred = model_->forward(images_);
  }
  t.forward_ms = clock.lap_ms();
  torch::Tensor l = loss_(pred, targets_).first;
  if (o_.dp) l = l * o_.dp->size();
  t.loss_ms = clock.lap_ms();
  if (o_.dp) o_.dp->arm_gradient_sync();
  l.backward();
  t.backward_ms = clock.lap_ms();
  if (o_.dp) o_.dp->finish_gradient_sync(), t.communication_ms = clock.lap_ms();
  if (o_.optimizer) optimizer_->step();
  optimizer_->zero_grad();
  t.optimizer_ms = clock.lap_ms();
  t.images_per_s = 1000.0 * o_.batch_size * (o_.dp ? o_.dp->size() : 1) / t.step_ms();
  return t;
}

StepTimes measure_steps(const DetectionModelImpl& source, const StepBenchOptions& o) {
  StepRunner runner(source, o);
  const bool on_cpu = !o.device.is_cuda();
  // Freed heap memory goes back to the system first, so the peak counts what a step needs, not
  // what an earlier measurement left in malloc's free lists. The warm-up step is counted too: it is
  // where the step's buffers are first allocated.
  double rss_before = 0;
  if (on_cpu) {
    malloc_trim(0);
    rss_before = peak_rss_bytes(/*reset=*/true);
  } else {  // as YOLOv5's autobatch: the caching allocator's reserved memory, from an empty cache
    synchronize(o.device);
    c10::cuda::CUDACachingAllocator::emptyCache();
    reset_peak_memory(o.device);
  }
  StepTimes sum;
  std::vector<double> step_ms;
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    const StepTimes t = runner.step(o.precision);
    if (s < o.warmup) continue;
    step_ms.push_back(t.step_ms());
    sum.forward_ms += t.forward_ms, sum.loss_ms += t.loss_ms, sum.backward_ms += t.backward_ms;
    sum.communication_ms += t.communication_ms, sum.optimizer_ms += t.optimizer_ms;
  }
  StepTimes t;
  t.forward_ms = sum.forward_ms / o.steps, t.loss_ms = sum.loss_ms / o.steps;
  t.backward_ms = sum.backward_ms / o.steps, t.optimizer_ms = sum.optimizer_ms / o.steps;
  t.communication_ms = sum.communication_ms / o.steps;
  t.images_per_s = 1000.0 * o.batch_size * (o.dp ? o.dp->size() : 1) / t.step_ms();
  t.spread = summarize_samples(step_ms).spread;
  t.peak_bytes = on_cpu ? std::max(0.0, peak_rss_bytes(false) - rss_before) : peak_memory_bytes(o.device);
  return t;
}

void run_step_bench(const StepBenchRun& run) {
  torch::set_num_threads(static_cast<int>(usable_cores()));
  StepBenchOptions o = run.shape;
  o.device = parse_device(run.device);
  // Weights alone are timed as they are: their architecture (a pruned one included) and classes.
  const std::string cfg = run.cfg.empty() && run.weights.empty() ? "yolov5n.yaml" : run.cfg;
  const BuiltModel built = build_model(cfg, run.weights, run.nc);
  std::cout << model_summary(*built.model, o.img_size).line() << "\n"
            << "batch " << o.batch_size << ", " << o.img_size << " px, " << torch::get_num_threads() << " threads, "
            << o.warmup << " warm-up + " << o.steps << " timed steps each\n";
  double first_ms = 0;
  for (const std::string& name : run.precisions) {
    o.precision = parse_precision(name);
    const StepTimes t = measure_steps(*built.model, o);
    if (first_ms == 0) first_ms = t.step_ms();
    char speedup[48];
    std::snprintf(speedup, sizeof speedup, ", %.2fx", first_ms / t.step_ms());
    std::cout << format_step_times(precision_name(o.precision), t) << speedup << std::endl;
  }
}

std::string format_step_times(const std::string& label, const StepTimes& t) {
  char line[240], comm[48] = "";
  if (t.communication_ms > 0) std::snprintf(comm, sizeof comm, ", communication %.1f", t.communication_ms);
  std::snprintf(line, sizeof line, "%s: %.1f ms/step (forward %.1f, loss %.1f, backward %.1f%s, optimizer %.1f), %.1f img/s",
                label.c_str(), t.step_ms(), t.forward_ms, t.loss_ms, t.backward_ms, comm, t.optimizer_ms, t.images_per_s);
  return line;
}

namespace {

// The all-reduce of `numel` floats alone: the median of 10, each started together after a barrier,
// so no rank waits for another's compute (what the step's communication stage also contains).
double all_reduce_alone_ms(DataParallel& dp, int64_t numel) {
  torch::Tensor flat = torch::zeros({numel});
  std::vector<double> ms;
  for (int rep = 0; rep < 10; ++rep) {
    dp.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    dp.group()->all_reduce_sum(flat);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(ms.begin(), ms.begin() + 5, ms.end());
  return ms[5];
}

// One rank's side of the data-parallel bench: bucketed-overlapped, then one exchange after backward.
void bench_as_rank(const DataParallelBenchRun& run) {
  auto dp = DataParallel::from_environment(std::chrono::minutes(10));
  dp->quiet_secondary_ranks();
  torch::set_num_threads(std::max(1, static_cast<int>(usable_cores()) / dp->world().local_size));
  StepBenchOptions o = run.shape;
  o.batch_size /= dp->size();
  o.dp = dp.get();
  BuiltModel built = build_model(run.cfg, "", run.nc);
  dp->broadcast_state(*built.model);
  StepTimes modes[2];
  for (int overlap = 1; overlap >= 0; --overlap) {
    o.grad_sync.overlap = overlap;
    modes[overlap] = measure_steps(*built.model, o);
    dp->barrier();
  }
  char label[96];
  std::snprintf(label, sizeof label, "%d processes x %d thread(s), bucketed during backward", dp->size(), torch::get_num_threads());
  std::cout << format_step_times(label, modes[1]) << "\n";
  std::snprintf(label, sizeof label, "%d processes x %d thread(s), one all-reduce after backward", dp->size(), torch::get_num_threads());
  std::cout << format_step_times(label, modes[0]) << "\n";
  const double hidden = modes[0].communication_ms > 0 ? 1 - modes[1].communication_ms / modes[0].communication_ms : 0;
  std::printf("communication share of a step: %.1f%% bucketed, %.1f%% after backward; %.0f%% of the after-backward wait "
              "hidden behind backward\n",
              100 * modes[1].communication_ms / modes[1].step_ms(), 100 * modes[0].communication_ms / modes[0].step_ms(), 100 * hidden);
  int64_t numel = 0;
  for (const auto& p : built.model->parameters()) numel += p.numel();
  std::printf("all-reduce of the %.1f MB of gradients alone: %.1f ms (median of 10 after a barrier; the stages above also "
              "hold the wait for the slower rank)\n",
              numel * 4 / 1e6, all_reduce_alone_ms(*dp, numel));
  std::fflush(stdout);
}

}  // namespace

int run_data_parallel_bench(const DataParallelBenchRun& run) {
  if (world_from_env().distributed()) {
    bench_as_rank(run);
    return 0;
  }
  torch::set_num_threads(static_cast<int>(usable_cores()));
  const BuiltModel built = build_model(run.cfg, "", run.nc);
  std::cout << model_summary(*built.model, run.shape.img_size).line() << "\n"
            << "global batch " << run.shape.batch_size << ", " << run.shape.img_size << " px, " << run.shape.warmup
            << " warm-up + " << run.shape.steps << " timed steps each\n";
  char label[64];
  std::snprintf(label, sizeof label, "1 process x %d threads", torch::get_num_threads());
  std::cout << format_step_times(label, measure_steps(*built.model, run.shape)) << std::endl;
  LaunchOptions launch;
  launch.nproc_per_node = run.nproc;
  launch.master_port = run.master_port;
  return launch_local_ranks(launch, own_arguments());
}

}  // namespace kestrel
