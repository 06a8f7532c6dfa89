// The training run: YOLOv5 train.py's loop in C++ with every stage timed. Sets up the run folder,
// data, model, optimizer, schedule, EMA and loss; trains epochs of warmup/accumulate/clip/step/EMA;
// validates the EMA model every val_period epochs; writes results.csv, last.pt/best.pt (atomically)
// and the timing report; stops early on patience; resumes an interrupted run.
#pragma once
#include <string>

#include "eval/metrics.h"
#include "profile/timeline.h"
#include "profile/verdict.h"
#include "train/train_options.h"

namespace kestrel {

struct TrainResult {
  std::string save_dir;
  int epochs_run = 0;
  double best_fitness = 0;
  ValMetrics final_metrics;
  StageTotals timeline;          // whole-run step timeline
  double seconds_per_epoch = 0;  // mean training time of an epoch (no validation)
  double seconds_per_val = 0;    // mean time of a validation pass
  Verdict verdict;               // what limited the run (also in report.json)
  bool interrupted = false;      // Ctrl-C stopped it (last.pt saved for --resume)
};

TrainResult train(TrainOptions options);

}  // namespace kestrel
