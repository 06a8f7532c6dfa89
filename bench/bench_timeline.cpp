// What always-on measurement costs a training step: the step timeline's marks, the system sampler's
// work per sample, and a real yolov5n training step (batch 16, 320 px, resident batch, SGD) timed
// with the timeline and sampler running (/1) and without them (/0).
// The figure of merit: (marks per step + sampler share) / step time, which must stay under 1%.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <thread>

#include "core/cpu_cores.h"
#include "core/hyp.h"
#include "model/detection_model.h"
#include "model/model_config.h"
#include "profile/system_sampler.h"
#include "profile/timeline.h"
#include "train/loss.h"
#include "train/optimizer.h"

namespace kestrel {
namespace {

void mark_one_step(StepTimeline& t) {
  t.mark(StepStage::data_wait);
  t.mark(StepStage::h2d);
  t.mark(StepStage::forward);
  t.mark(StepStage::loss);
  t.mark(StepStage::backward);
  t.mark(StepStage::optimizer);
  t.mark(StepStage::logging);
  t.end_step();
}

// The marks a training step makes, and nothing else.
void BM_TimelineMarksPerStep(benchmark::State& state) {
  StepTimeline t;
  t.start();
  for (auto _ : state) mark_one_step(t);
  benchmark::DoNotOptimize(t.epoch());
}
BENCHMARK(BM_TimelineMarksPerStep);

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// CPU time of one system sample (/proc reads, NVML when present), from a sampler ticking every
// 10 ms for half a second. The trainer samples every 0.5 s: its share of one core is this / 0.5 s.
void BM_SystemSamplerCpuPerSample(benchmark::State& state) {
  double cpu = 0;
  size_t samples = 0;
  for (auto _ : state) {
    SystemSampler sampler(0.01);
    const double c0 = cpu_seconds();
    sampler.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    sampler.stop();
    cpu += cpu_seconds() - c0;
    samples += sampler.samples_taken();
  }
  state.counters["cpu_us_per_sample"] = samples ? cpu / samples * 1e6 : 0;
  state.counters["core_share_at_0.5s"] = samples ? cpu / samples / 0.5 : 0;
}
BENCHMARK(BM_SystemSamplerCpuPerSample)->Iterations(2)->Unit(benchmark::kMillisecond);

// A full training step on a resident batch, with (/1) or without (/0) the timeline and sampler.
void BM_Yolov5nTrainStep(benchmark::State& state) {
  const bool measured = state.range(0) != 0;
  torch::set_num_threads(static_cast<int>(usable_cores()));
  torch::manual_seed(0);
  DetectionModel model(load_model_config("yolov5n.yaml"), 80);
  model->train();
  model->set_memory_format(torch::MemoryFormat::ChannelsLast);
  auto optimizer = smart_optimizer(*model, OptimizerKind::SGD, 0.01, 0.937, 5e-4);
  YoloLoss loss(loss_config_from_hyp(Hyp{}, 80, static_cast<int>(model->nl()), 320, model->anchors()));
  const torch::Tensor images = torch::rand({16, 3, 320, 320}).contiguous(torch::MemoryFormat::ChannelsLast);
  std::vector<float> rows;  // 4 labels per image
  for (int i = 0; i < 16; ++i)
    for (int k = 0; k < 4; ++k) rows.insert(rows.end(), {float(i), float((i + k) % 80), 0.2f + 0.15f * k, 0.5f, 0.1f + 0.05f * k, 0.2f});
  const torch::Tensor targets = torch::from_blob(rows.data(), {64, 6}, torch::kFloat32).clone();
  StepTimeline timeline;
  SystemSampler sampler;
  auto step = [&](bool marks) {
    if (marks) timeline.mark(StepStage::data_wait), timeline.mark(StepStage::h2d);
    auto pred = model->forward(images);
    if (marks) timeline.mark(StepStage::forward);
    auto [total, items] = loss(pred, targets);
    if (marks) timeline.mark(StepStage::loss);
    total.backward();
    if (marks) timeline.mark(StepStage::backward);
    optimizer->step();
    optimizer->zero_grad();
    if (marks) timeline.mark(StepStage::optimizer), timeline.mark(StepStage::logging), timeline.end_step();
  };
  for (int i = 0; i < 2; ++i) step(false);  // warm-up: the first steps build the convolution kernels
  if (measured) sampler.start();
  timeline.start();
  for (auto _ : state) step(measured);
  sampler.stop();
}
BENCHMARK(BM_Yolov5nTrainStep)->Arg(0)->Arg(1)->Arg(0)->Arg(1)->Iterations(10)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace kestrel

BENCHMARK_MAIN();
