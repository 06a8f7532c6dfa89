// Kestrel training checkpoints (weights/last.pt, weights/best.pt): model and EMA weights,
// optimizer state and the run's metadata (epoch, best fitness, EMA updates, model yaml, class
// names, training options for --resume, date). The file is a LibTorch archive (torch::save
// format); the metadata is one JSON string inside it. Files are replaced atomically.
#pragma once
#include "core/atomic_file.h"
#include <torch/torch.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kestrel {

struct CheckpointMeta {
  int epoch = -1;              // last completed epoch; -1 in a stripped (final) checkpoint
  double best_fitness = 0.0;
  int64_t ema_updates = 0;
  std::string model_yaml;      // the model config text, so the file rebuilds its own model
  std::string model_name;      // the yaml's file name (yolov5n.yaml), for the model summary
  std::map<std::string, std::vector<int64_t>> pruned_shapes;  // ModelConfig::pruned_shapes of the model
  int nc = 0;                  // the model's class count (the data's, whatever the yaml text says)
  std::vector<std::string> names;  // nc class names
  nlohmann::json train_options = nlohmann::json::object();  // the run's options, for --resume
  nlohmann::json resume_point = nlohmann::json::object();   // where the run stood (train/resume_point.h)
  std::string date;            // ISO-8601 local time; filled in when saving if empty
  bool has_ema = false;        // set by serialize/load: the file holds EMA weights
  bool has_optimizer = false;  // set by serialize/load: the file holds optimizer state
  bool has_grads = false;      // set by serialize/load: the file holds gradients not yet stepped
};

// The whole checkpoint as bytes (the state is copied out synchronously, so the caller may keep
// training and write the bytes elsewhere, e.g. in a background thread). ema and optimizer may be
// null to leave them out. with_grads also stores the model's gradients: taken between two optimizer
// steps of an accumulation window, they are part of the state an exact resume needs.
std::string serialize_checkpoint(const CheckpointMeta& meta, const torch::nn::Module& model,
                                 const torch::nn::Module* ema, const torch::optim::Optimizer* optimizer,
                                 bool with_grads = false);

// serialize_checkpoint + write_file_atomic.
void save_checkpoint(const std::string& path, const CheckpointMeta& meta, const torch::nn::Module& model,
                     const torch::nn::Module* ema, const torch::optim::Optimizer* optimizer, bool with_grads = false);

// Restores the gradients a checkpoint saved with_grads into `model` (same architecture); a file
// without them leaves the gradients as they are and returns false.
bool load_gradients(const std::string& path, torch::nn::Module& model);

// Reads a checkpoint; restores the state of whichever of model / ema / optimizer is non-null
// (each must have the architecture / parameter groups it was saved with) and returns the
// metadata. Asking for EMA or optimizer state the file lacks throws std::runtime_error.
// Pass all three null to read only the metadata (e.g. to rebuild the model for --resume).
CheckpointMeta load_checkpoint(const std::string& path, torch::nn::Module* model, torch::nn::Module* ema,
                               torch::optim::Optimizer* optimizer);

// YOLOv5's strip_optimizer for the final best.pt/last.pt: the EMA weights (if any) become the
// model weights; optimizer, EMA and updates are dropped and epoch becomes -1. `scratch` is a
// module of the checkpoint's architecture used to carry the weights. Weights stay float32.
void strip_checkpoint(const std::string& path, torch::nn::Module& scratch);

}  // namespace kestrel
