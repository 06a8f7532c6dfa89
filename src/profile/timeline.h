// Step timeline: where every millisecond of a training step went. Always on: one steady_clock read
// per stage boundary (~20 ns), accumulated per epoch and per run, no allocation on the hot path.
#pragma once
#include <array>
#include <chrono>
#include <cstddef>
#include <string>

namespace kestrel {

// communication: a data-parallel step waiting for its gradient all-reduce (what backward did not hide).
enum class StepStage : int { data_wait = 0, h2d, forward, loss, backward, communication, optimizer, logging, validation, count };
constexpr size_t kNumStages = static_cast<size_t>(StepStage::count);
const char* stage_name(StepStage s);

struct StageTotals {
  std::array<double, kNumStages> seconds{};  // summed time per stage
  size_t steps = 0;                          // training steps counted
  double total() const;                      // all stages
  double step_seconds() const;               // training stages only (no validation)
  double share(StepStage s) const;               // fraction of the step time spent in s
  StageTotals& operator+=(const StageTotals& o);
};

class StepTimeline {
 public:
  using Clock = std::chrono::steady_clock;
  // Starts timing: the time up to the next mark() is attributed to the stage named there.
  void start() { last_ = Clock::now(); }
  // Attributes the time since the previous mark (or start) to stage s.
  void mark(StepStage s) {
    const auto now = Clock::now();
    epoch_.seconds[static_cast<size_t>(s)] += std::chrono::duration<double>(now - last_).count();
    last_ = now;
  }
  void end_step() { ++epoch_.steps; }
  // Closes the epoch: its totals join the run's and are returned; the epoch counters reset.
  StageTotals end_epoch();
  // Forgets all counted so far, of the epoch and the run (warm-up steps a measurement leaves out).
  void discard() { epoch_ = run_ = StageTotals{}; }
  const StageTotals& epoch() const { return epoch_; }
  const StageTotals& run() const { return run_; }

 private:
  Clock::time_point last_ = Clock::now();
  StageTotals epoch_, run_;
};

// "data 1.2% | fwd 31% | loss 4% | bwd 52% | opt 9% | log 0.3%  (612 ms/step)"
std::string format_stage_line(const StageTotals& t);

}  // namespace kestrel
