// An `auto` choice checked by the run it chose for. A probe before the first step predicted a figure
// of the chosen setting (--amp auto: the ms of forward+loss+backward; --workers auto: the share of
// each step spent waiting for data). The run skips its warm-up steps and measures that figure over a
// window of steps. Within the noise the choice stands, and one line says so. Beyond it, the run
// tries the alternative setting for a window of its own and keeps whichever costs less per step,
// once. The trainer applies each action and records the setting it ends with (opt.json), so a resume
// keeps it.
#pragma once
#include <string>
#include <vector>

#include "core/sample_stats.h"

namespace kestrel {

struct AutoCheckSpec {
  std::string flag;         // "--amp auto"
  std::string chosen;       // "bf16"
  std::string alternative;  // "fp32"; "" when there is nothing else to try
  std::string figure;       // "forward+loss+backward", "data wait"
  double predicted = 0;     // ms, or a share of the step in [0, 1]
  // A share is compared in points, and only an excess counts (a loader that keeps up better than
  // predicted is no fault); ms are compared relatively, both ways.
  bool share = false;
  double noise = 0.05;      // the least disagreement that counts: the probe's own noise, or a floor
  int warmup = 3;           // steps skipped before each window (kernels chosen, heap grown, threads started)
  int window = 5;           // steps measured in each setting
};

class AutoCheck {
 public:
  enum class Action {
    none,             // keep going
    stand,            // the prediction held (or nothing else to try): the choice stays, checked
    try_alternative,  // the prediction failed: run the alternative next
    keep_alternative, // the alternative cost less per step: keep it for the rest of the run
    back_to_chosen,   // it did not: return to the chosen setting for the rest of the run
  };
  explicit AutoCheck(AutoCheckSpec spec);
  // One step in the setting now in force: the checked figure and what the step cost (ms; the two
  // settings are compared by it).
  Action add_step(double figure, double cost_ms);
  // The next n steps are not typical of the setting (an epoch's first batch refills the loader).
  void skip(int n) { skip_ += n; }
  bool finished() const { return phase_ == Phase::done; }
  const std::string& line() const { return line_; }  // the sentence of the latest action

 private:
  enum class Phase { chosen, alternative, done };
  Action judge_prediction();
  Action judge_alternative();

  AutoCheckSpec spec_;
  Phase phase_ = Phase::chosen;
  int skip_ = 0;
  std::vector<double> figures_, costs_, chosen_costs_;
  std::string line_;
};

}  // namespace kestrel
