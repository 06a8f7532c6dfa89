// Flags that several commands share, registered once: the model to load (val, detect), the inference
// settings (val, detect), the run folder, --amp, and train.py's flags (train, profile).
#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "train/train_options.h"

namespace kestrel::cli {

// --weights (required), --cfg, --device.
void add_model_flags(CLI::App* cmd, std::string& weights, std::string& cfg, std::string& device);
// --conf-thres, --iou-thres, --max-det, --half (--imgsz differs: one size for val, H W for detect).
void add_inference_flags(CLI::App* cmd, double& conf_thres, std::optional<double>& iou_thres, std::optional<int>& max_det,
                         bool& half);

// --project, --name, --exist-ok: the run folder project/name[N] (train, profile, detect, prune).
void add_run_folder_flags(CLI::App* cmd, std::string& project, std::string& name, bool& exist_ok);
// --amp auto|fp16|bf16|off (train, profile, prune).
void add_amp_flag(CLI::App* cmd, std::string& amp, const std::string& help);

// The train.py flags `train` and `profile` share; `workers` is the --workers text ("auto" or N).
void add_train_flags(CLI::App* cmd, TrainOptions& o, std::string& workers, bool& no_progress);
// After parsing: --workers and --no-progress into the options; no data, cfg or weights: the demo's model.
void finish_train_options(TrainOptions& o, const std::string& workers, bool no_progress);

}  // namespace kestrel::cli
