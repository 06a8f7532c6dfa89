// The run's check of an `auto` choice (see auto_check.h).
#include "profile/auto_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kestrel {

namespace {

std::string format(const char* fmt, double a, double b = 0, double c = 0, double d = 0) {
  char buf[200];
  std::snprintf(buf, sizeof buf, fmt, a, b, c, d);
  return buf;
}

}  // namespace

AutoCheck::AutoCheck(AutoCheckSpec spec) : spec_(std::move(spec)), skip_(spec_.warmup) {}

AutoCheck::Action AutoCheck::add_step(double figure, double cost_ms) {
  if (phase_ == Phase::done) return Action::none;
  if (skip_ > 0) {
    --skip_;
    return Action::none;
  }
  figures_.push_back(figure);
  costs_.push_back(cost_ms);
  if (static_cast<int>(costs_.size()) < spec_.window) return Action::none;
  return phase_ == Phase::chosen ? judge_prediction() : judge_alternative();
}

AutoCheck::Action AutoCheck::judge_prediction() {
  const SampleSummary measured = summarize_samples(figures_);
  std::string what;  // "bf16: forward+loss+backward 1040 ms a step (probe 1035 ms, +0.5%"
  double error = 0, noise = spec_.noise;
  if (spec_.share) {
    error = measured.median - spec_.predicted;
    what = format("%.1f%% of each step", 100 * measured.median) + " (predicted " + format("%.1f%%", 100 * spec_.predicted) +
           format(", %+.1f points", 100 * error);
  } else {
    error = spec_.predicted > 0 ? measured.median / spec_.predicted - 1 : 0;
    noise = std::max(noise, measured.spread / 2);
    what = format("%.0f ms a step", measured.median) + " (probe " + format("%.0f ms, %+.1f%%", spec_.predicted, 100 * error);
  }
  const bool disagrees = spec_.share ? error > noise : std::fabs(error) > noise;
  line_ = spec_.flag + " check: " + spec_.chosen + " " + spec_.figure + " " + what +
          (spec_.share ? format(", noise %.1f points)", 100 * noise) : format(", noise ±%.1f%%)", 100 * noise));
  if (!disagrees) {
    line_ += ": as predicted, " + spec_.chosen + " stays";
    phase_ = Phase::done;
    return Action::stand;
  }
  if (spec_.alternative.empty()) {
    line_ += ": not as predicted, and there is no other setting to try";
    phase_ = Phase::done;
    return Action::stand;
  }
  line_ += ": not as predicted; trying " + std::to_string(spec_.window) + " steps of " + spec_.alternative;
  chosen_costs_ = costs_;
  figures_.clear();
  costs_.clear();
  skip_ = spec_.warmup;
  phase_ = Phase::alternative;
  return Action::try_alternative;
}

AutoCheck::Action AutoCheck::judge_alternative() {
  const SampleSummary chosen = summarize_samples(chosen_costs_), alternative = summarize_samples(costs_);
  const double noise = comparison_noise(chosen, alternative, 0.03);
  const double gain = chosen.median > 0 ? 1 - alternative.median / chosen.median : 0;
  const bool keep = gain > noise;
  line_ = spec_.flag + " check: " + spec_.alternative + format(" %.0f ms a step against ", alternative.median) + spec_.chosen +
          format(" %.0f ms (%.1f%% less, noise ±%.1f%%): ", chosen.median, 100 * gain, 100 * noise) +
          (keep ? "switched to " + spec_.alternative + " for the rest of the run" : spec_.chosen + " stays for the rest of the run");
  phase_ = Phase::done;
  return keep ? Action::keep_alternative : Action::back_to_chosen;
}

}  // namespace kestrel
