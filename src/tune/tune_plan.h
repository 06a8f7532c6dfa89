// The field report's method as data: the levers in the order it pulls them, the rule that keeps one,
// the epoch-time prediction, the `kestrel train` line of a configuration, and the report a tune
// writes (report.json, which reads back).
#pragma once
#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

#include "train/train_options.h"

namespace kestrel {

struct Lever {
  std::string name;     // "cache", "workers", ...
  std::string setting;  // the flags it sets, as typed: "--cache auto"
  std::string cost;     // accuracy-trading levers: what they cost in accuracy terms; "" for speed levers
  std::function<void(TrainOptions&)> apply;
};

struct MachineFacts {
  bool gpu = false;       // training device is an accelerator
  bool cpu_bf16 = false;  // the CPU has bf16 instructions (avx512_bf16 / amx_bf16)
};

// The speed levers in the report's order: storage/cache, loader workers, prefetch, pinned memory,
// mixed precision, batch size. A lever `base` already pulls, or one this machine lacks, goes to
// `skipped` with the reason instead.
std::vector<Lever> speed_levers(const TrainOptions& base, const MachineFacts& facts, std::vector<std::string>& skipped);
// Measured but never chosen: the next smaller model, a smaller input size.
std::vector<Lever> accuracy_levers(const TrainOptions& base);

// A lever stays when its epoch time beats the current one by more than the noise (a share, e.g.
// 0.04 for 4 %): what two runs of one configuration differ by.
bool keeps_lever(double candidate_epoch_s, double current_epoch_s, double noise);
// The noise margin from two timings of one configuration, never below 2 %.
double noise_margin(double first_s, double second_s);

// Epoch time from a steady step time: the wait for the epoch's first batch (the loader filling its
// queue), the epoch's batches (a last, partial batch as its share: 1000 images at batch 64 are 15.6
// steps' work, not 16), and, when validation is measured, its share per epoch (one pass every
// val_period epochs).
double predicted_epoch_seconds(double fill_s, double step_s, double batches, double val_s, int val_period);

// --budget: "600", "90s", "10m", "1.5h" -> seconds; throws std::invalid_argument naming the text.
double parse_budget(const std::string& text);

// The `kestrel train` command of `o`: the flags that differ from their defaults.
std::string train_command(const TrainOptions& o);

struct TuneRow {
  int step = 0;
  std::string lever, setting;
  bool trades_accuracy = false;
  std::string cost;
  double epoch_s = 0, speedup = 1, data_wait_share = 0, cpu_percent = 0;
  bool kept = false;
  std::string note;  // the verdict of its trial, or why it was kept or dropped
};

struct TuneReport {
  std::vector<TuneRow> rows;          // baseline first, then each speed lever, then accuracy levers
  std::vector<std::string> skipped;   // levers not tried, with the reason
  double noise = 0;                   // the keep/drop margin, and the epoch prediction's stated noise
  std::string final_command;
  double predicted_epoch_s = 0, measured_epoch_s = 0;  // of the final command
  std::string measured_how;           // "one real epoch" or "N steps"
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TuneRow, step, lever, setting, trades_accuracy, cost, epoch_s, speedup, data_wait_share,
                                   cpu_percent, kept, note)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TuneReport, rows, skipped, noise, final_command, predicted_epoch_s, measured_epoch_s,
                                   measured_how)

}  // namespace kestrel
