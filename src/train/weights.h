// Building a model and starting it from weights: a YOLOv5 .pt (read without Python) or a Kestrel
// checkpoint. Tensors are transferred when name and shape match, as YOLOv5's intersect_dicts.
#pragma once
#include <string>
#include <vector>

#include "model/detection_model.h"

namespace kestrel {

struct BuiltModel {
  DetectionModel model{nullptr};
  std::string model_yaml;          // the config text the model was built from (saved in checkpoints)
  std::vector<std::string> names;  // class names carried by the weights (empty if none)
  size_t transferred = 0, total = 0;  // tensors loaded from the weights / tensors in the model
};

// cfg: model yaml path or built-in name; "" uses the yaml inside `weights`.
// weights: "" for random initialisation. nc > 0 overrides the yaml's class count.
BuiltModel build_model(const std::string& cfg, const std::string& weights, int nc);

// True when `path` is a Kestrel checkpoint (as opposed to a YOLOv5 .pt).
bool is_kestrel_checkpoint(const std::string& path);

}  // namespace kestrel
