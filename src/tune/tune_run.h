// `kestrel tune` as a library call: the user's training settings as the baseline, then each lever of
// the ladder (tune/tune_plan.h) tried in short timed runs of the trainer and kept only when it beats
// the current step by more than the measured noise; validation's cost per epoch from one timed pass;
// the accuracy-trading levers measured apart; the final configuration's prediction checked by
// running it. Writes runs/tune/expN: report.json, ladder.png and the trials' run folders.
#pragma once
#include "train/train_options.h"
#include "tune/tune_plan.h"

namespace kestrel {

struct TuneOptions {
  TrainOptions base;      // the user's settings; its project/name are the tune's run folder
  double budget_s = 600;  // the whole tune, final check included
  int steps = 10;         // timed training steps per trial
};

TuneReport run_tune(const TuneOptions& options);

}  // namespace kestrel
