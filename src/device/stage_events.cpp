// CUDA events at the step timeline's marks (see stage_events.h).
#include "device/stage_events.h"

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdint>
#include <cstdio>

namespace kestrel {

struct DeviceStageClock::Step {
  at::cuda::CUDAEvent start{cudaEventDefault};  // timing events (the default flags disable timing)
  std::vector<std::pair<StepStage, std::unique_ptr<at::cuda::CUDAEvent>>> marks;
  size_t used = 0;
};

namespace {
// Steps the GPU may run behind the host before end_step waits for the oldest: the trainer reads its
// loss on the host every step, so in practice one is in flight.
constexpr size_t kMaxInFlight = 8;
}  // namespace

DeviceStageClock::DeviceStageClock(const torch::Device& device) : enabled_(device.is_cuda()), device_(device) {}

DeviceStageClock::~DeviceStageClock() = default;

std::unique_ptr<DeviceStageClock::Step> DeviceStageClock::recycled() {
  if (spare_.empty()) return std::make_unique<Step>();
  std::unique_ptr<Step> s = std::move(spare_.back());
  spare_.pop_back();
  s->used = 0;
  return s;
}

void DeviceStageClock::begin_step() {
  if (!enabled_) return;
  c10::cuda::CUDAGuard guard(device_.index());
  open_ = recycled();
  open_->start.record(c10::cuda::getCurrentCUDAStream(device_.index()));
}

void DeviceStageClock::mark(StepStage stage) {
  if (!enabled_ || !open_) return;
  c10::cuda::CUDAGuard guard(device_.index());
  Step& s = *open_;
  if (s.used == s.marks.size()) s.marks.emplace_back(stage, std::make_unique<at::cuda::CUDAEvent>(cudaEventDefault));
  s.marks[s.used].first = stage;
  s.marks[s.used].second->record(c10::cuda::getCurrentCUDAStream(device_.index()));
  ++s.used;
}

void DeviceStageClock::end_step() {
  if (!enabled_ || !open_) return;
  in_flight_.push_back(std::move(open_));
  sum_finished(kMaxInFlight);
}

void DeviceStageClock::sum_finished(size_t keep) {
  while (!in_flight_.empty()) {
    Step& s = *in_flight_.front();
    at::cuda::CUDAEvent& last = s.used ? *s.marks[s.used - 1].second : s.start;
    if (in_flight_.size() > keep)
      last.synchronize();
    else if (!last.query())
      return;  // the GPU has not got there yet: read it at a later step
    const at::cuda::CUDAEvent* prev = &s.start;
    for (size_t k = 0; k < s.used; ++k) {
      totals_.seconds[static_cast<size_t>(s.marks[k].first)] += prev->elapsed_time(*s.marks[k].second) / 1000.0;
      prev = s.marks[k].second.get();
    }
    ++totals_.steps;
    spare_.push_back(std::move(in_flight_.front()));
    in_flight_.pop_front();
  }
}

StageTotals DeviceStageClock::take(bool wait) {
  if (!enabled_) return {};
  sum_finished(wait ? 0 : SIZE_MAX);
  StageTotals t = totals_;
  totals_ = StageTotals{};
  return t;
}

std::string format_device_line(const StageTotals& gpu, const StageTotals& host) {
  if (gpu.steps == 0 || host.steps == 0) return "";
  const double per = 1000.0 / static_cast<double>(gpu.steps);
  std::string out = "GPU per step:";
  const StepStage shown[] = {StepStage::h2d, StepStage::forward, StepStage::loss, StepStage::backward, StepStage::communication, StepStage::optimizer};
  double busy = 0;
  char buf[64];
  for (StepStage s : shown) {
    const double ms = gpu.seconds[static_cast<size_t>(s)] * per;
    busy += ms;
    if (ms <= 0) continue;
    std::snprintf(buf, sizeof buf, " %s %.1f ms,", stage_name(s), ms);
    out += buf;
  }
  if (out.back() == ',') out.pop_back();
  const double step_ms = host.step_seconds() * 1000.0 / static_cast<double>(host.steps);
  std::snprintf(buf, sizeof buf, " = %.1f ms of a %.1f ms step (%.0f%% busy)", busy, step_ms, step_ms > 0 ? 100.0 * busy / step_ms : 0.0);
  return out + buf;
}

}  // namespace kestrel
