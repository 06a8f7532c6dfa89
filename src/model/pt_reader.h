// Reads official YOLOv5 .pt checkpoints (torch.save zip archives holding a pickled DetectionModel)
// into LibTorch tensors, without Python: the model's state_dict, its yaml, class names and strides.
#pragma once

#include <torch/torch.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kestrel {

struct PtCheckpoint {
  // state_dict() of `model` (or `ema` when model is None): floating tensors as float32, integer
  // tensors (num_batches_tracked) keep their type. Names as in PyTorch: model.0.conv.weight, ...
  std::map<std::string, torch::Tensor> state;
  std::vector<std::string> state_order;  // the same names in state_dict() order
  std::string model_yaml;                // the model's yaml dict as YAML text ("" if absent)
  std::vector<std::string> names;        // class names (list, or dict 0..n-1)
  std::vector<double> stride;            // e.g. {8, 16, 32}
  int nc = 0;
  std::string source;                    // "model" or "ema"
  std::optional<int64_t> epoch;
  std::optional<double> best_fitness;
};

// Throws kestrel::FormatError ("<path>: <what>") for unreadable, malformed or unsupported files.
PtCheckpoint read_pt_checkpoint(const std::string& path);

}  // namespace kestrel
