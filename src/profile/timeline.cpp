// Step timeline accounting and its one-line summary.
#include "profile/timeline.h"

#include <cstdio>

namespace kestrel {

const char* stage_name(StepStage s) {
  static const char* names[] = {"data", "h2d", "forward", "loss", "backward", "communication", "optimizer", "logging", "validation"};
  return names[static_cast<int>(s)];
}

double StageTotals::total() const {
  double t = 0;
  for (double s : seconds) t += s;
  return t;
}

double StageTotals::step_seconds() const { return total() - seconds[static_cast<size_t>(StepStage::validation)]; }

double StageTotals::share(StepStage s) const {
  const double t = step_seconds();
  return t > 0 ? seconds[static_cast<size_t>(s)] / t : 0.0;
}

StageTotals& StageTotals::operator+=(const StageTotals& o) {
  for (size_t i = 0; i < kNumStages; ++i) seconds[i] += o.seconds[i];
  steps += o.steps;
  return *this;
}

StageTotals StepTimeline::end_epoch() {
  StageTotals done = epoch_;
  run_ += epoch_;
  epoch_ = StageTotals{};
  return done;
}

std::string format_stage_line(const StageTotals& t) {
  std::string out;
  char buf[64];
  for (size_t i = 0; i < static_cast<size_t>(StepStage::validation); ++i) {
    const double share = t.share(static_cast<StepStage>(i));
    const bool optional = i == static_cast<size_t>(StepStage::h2d) || i == static_cast<size_t>(StepStage::communication);
    if (optional && share < 0.0005) continue;  // CPU runs have no copy, one process no exchange
    std::snprintf(buf, sizeof buf, "%s%s %.1f%%", out.empty() ? "" : " | ", stage_name(static_cast<StepStage>(i)), 100 * share);
    out += buf;
  }
  if (t.steps) {
    std::snprintf(buf, sizeof buf, "  (%.0f ms/step)", 1000 * t.step_seconds() / t.steps);
    out += buf;
  }
  return out;
}

}  // namespace kestrel
