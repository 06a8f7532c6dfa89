// Options of `kestrel train`, named after YOLOv5 train.py's flags. Stored in every checkpoint as
// JSON so that --resume continues the same run with the same settings.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kestrel {

struct TrainOptions {
  std::string weights;          // initial weights: YOLOv5 .pt or a Kestrel checkpoint ("" = from scratch)
  std::string cfg;              // model yaml (file or built-in name); optional when weights carry one
  std::string data;             // data.yaml ("" = the built-in demo dataset)
  std::string hyp;              // hyp.yaml over the family's defaults ("" = hyp.scratch-low, or Ultralytics' for its models)
  int epochs = 100;
  int batch_size = 16;          // -1 = AutoBatch (train/auto_batch.h); a run records the batch it chose
  int nbs = 64;                 // nominal batch: accumulate round(nbs/batch) batches, weight decay to match
  std::string lr_scale = "none";  // none | linear | sqrt: lr0 scaled when batch x accumulate passes nbs
  std::string amp = "auto";     // auto | fp16 | bf16 | off (train/amp_choice.h); a run records its choice
  int img_size = 640;
  bool rect = false;
  std::string resume;           // "" = new run; a last.pt path, or "auto" for the most recent run
  bool nosave = false;          // only save the final checkpoint
  bool noval = false;           // only validate the final epoch
  bool noplots = false;
  bool noautoanchor = false;    // keep the model's anchors whatever their fit to the labels
  std::string cache = "auto";   // auto | none | ram | disk (auto: choose_auto_cache, data/image_cache.h)
  std::string device;           // cpu | cuda | cuda:N | N | N,M,... ; "" = a GPU when there is one
  bool fast = false;            // --fast: cuDNN autotuning and non-deterministic kernels (device/device.h)
  bool multi_scale = false;
  bool single_cls = false;
  std::string optimizer = "auto";  // auto | SGD | Adam | AdamW | MuSGD (train/optimizer.h: choose_optimizer)
  int workers = -1;             // loader threads; -1 = auto (measured, see data/worker_tuning.h)
  int prefetch = 4;             // batches prepared ahead
  std::string project = "runs/train";
  std::string name = "exp";
  bool exist_ok = false;
  bool cos_lr = false;
  double label_smoothing = 0.0;
  int patience = 100;
  std::vector<int> freeze = {0};
  int save_period = -1;
  double save_minutes = 0;      // also write last.pt every N minutes mid-epoch (0 = only at epoch ends)
  int seed = 0;
  int close_mosaic = -1;        // turn mosaic off for the last N epochs; -1: the family's (YOLOv5 0, Ultralytics 10)
  int val_period = 1;           // validate every N epochs (the last epoch always)
  bool progress = true;         // progress bars
  int max_steps = 0;            // stop after this many steps in all (kestrel profile); 0 = no limit
  int untimed_steps = 0;        // the first steps, left out of the step timeline (warm-up; kestrel tune's trials)
  bool scan = true;             // health-check the dataset before training (cached; see data/scan.h)
  bool check_auto = true;       // the run checks its auto choices against its own steps (profile/auto_check.h); tune's trials leave it to the tune
  bool resident_batch = false;  // train on the first batch over and over: the compute limit (kestrel profile)
  double sparsity = 0;          // BN-sparsity strength S (train/sparsity.h); 0 = off
  bool sparsity_decay = false;  // S falls linearly to S/10 over the run
  double sparsity_target = 0;   // > 0: only the channels a prune at this ratio would remove get S
  double sparsity_cost_weight = 0;  // ...that prune ranking by |gamma| / cost^this (prune --cost-weight)
  int sparsity_multiple = 8;         // ...and rounding kept widths up to this multiple (prune --multiple)
  bool sync_bn = false;         // data parallel: BatchNorm statistics over the global batch (distributed/sync_batch_norm.h)
  double dist_timeout = 1800;   // data parallel: seconds a rank waits for the others before giving up
  int world_size = 1;           // processes the run trains on (recorded; --resume needs the same)
};

void to_json(nlohmann::json& j, const TrainOptions& o);
void from_json(const nlohmann::json& j, TrainOptions& o);

}  // namespace kestrel
