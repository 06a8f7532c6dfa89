// The GPU's own time for each stage of a training step, from CUDA events. On a GPU the host only
// queues kernels, so its clock charges a stage's time to whichever later call waits for the GPU;
// events recorded on the compute stream at the same marks measure what the GPU did between them.
// They are read without stalling the pipeline: a step's events are summed once the GPU has passed
// them (event query), a few steps later, and the totals are complete after take(/*wait=*/true).
// On a CPU every call is a no-op and enabled() is false.
#pragma once
#include <torch/torch.h>

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "profile/timeline.h"

namespace kestrel {

class DeviceStageClock {
 public:
  explicit DeviceStageClock(const torch::Device& device);
  ~DeviceStageClock();
  bool enabled() const { return enabled_; }
  void begin_step();           // an event before the step's first kernel
  void mark(StepStage stage);  // an event closing `stage` (the GPU time since the previous event)
  void end_step();             // the step is complete; earlier steps the GPU has finished are summed
  // The stage totals of the steps summed since the last take; wait: synchronise on the steps still in
  // flight first (an epoch's end), else they stay for the next take.
  StageTotals take(bool wait);

 private:
  struct Step;
  void sum_finished(size_t keep);  // sums the finished steps, waiting for the oldest while more than keep are in flight
  std::unique_ptr<Step> recycled();

  bool enabled_ = false;
  torch::Device device_;
  std::unique_ptr<Step> open_;
  std::deque<std::unique_ptr<Step>> in_flight_;
  std::vector<std::unique_ptr<Step>> spare_;  // events are created once and re-recorded
  StageTotals totals_;
};

// "GPU per step: fwd 12.1 ms, loss 1.0 ms, bwd 25.3 ms, opt 3.2 ms = 41.6 ms of a 45.0 ms step (92%
// busy)": the device's time against the host's wall clock for the same steps.
std::string format_device_line(const StageTotals& gpu, const StageTotals& host);

}  // namespace kestrel
