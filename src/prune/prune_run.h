// `kestrel prune` as a library call: removes the channels with the smallest BatchNorm |gamma| from a
// trained model (model/channel_prune.h) and writes a checkpoint of the smaller architecture that
// val, detect, `train --weights` (fine-tuning) and --resume load like any other. It prints layers,
// parameters and GFLOPs before and after, mAP@0.5:0.95 of both with a data.yaml, and the measured
// inference and training step time of both at the same precision.
#pragma once
#include <string>

#include "model/channel_prune.h"

namespace kestrel {

struct PruneRunOptions {
  std::string weights, data, device;  // "" = GPU 0 when there is one
  std::string project = "runs/prune", name = "exp";
  bool exist_ok = false;
  PruneOptions prune;
  int img_size = 640, batch_size = 16;  // of the timed training step and validation
  std::string amp = "auto";             // precision of the timed training steps (train/amp_choice.h)
  int workers = 2;
};

struct ModelFigures {
  int64_t layers = 0, parameters = 0;
  double gflops = 0;
  double map50_95 = -1, map50 = -1;   // -1 without data
  double inference_ms = 0;            // batch 1, fused, eval
  double train_images_per_s = 0;      // training step at img_size, batch_size
};

struct PruneRunSummary {
  std::string checkpoint;  // the pruned model
  ModelFigures before, after;
  PruneResult pruned;
};

PruneRunSummary run_prune(const PruneRunOptions& options);

}  // namespace kestrel
