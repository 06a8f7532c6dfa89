// Building a model and starting it from weights: a YOLOv5 .pt (read without Python) or a Kestrel
// checkpoint. YOLOv5's rules: the model comes from --cfg, else from the yaml the weights carry; the
// data's class count wins over the yaml's ("Overriding model.yaml nc=80 with nc=3"); tensors are
// transferred when name and shape match (intersect_dicts), the anchors only when the model's yaml
// is the weights' own (a --cfg brings its own anchors). A Kestrel checkpoint gives its EMA weights
// when it holds them, as YOLOv5 takes ckpt['ema'] or ckpt['model'].
#pragma once
#include <map>
#include <string>
#include <vector>

#include "model/detection_model.h"

namespace kestrel {

// What a weights file holds: the architecture it was trained with and its tensors.
struct WeightsSource {
  ModelConfig config;              // its model yaml, with config.nc = the class count it was trained on
  std::vector<std::string> names;  // its class names (nc of them, or empty when the file has none)
  std::map<std::string, torch::Tensor> state;
};

// Reads a YOLOv5 .pt or a Kestrel checkpoint. Throws std::runtime_error naming the file.
WeightsSource read_weights(const std::string& path);

struct BuiltModel {
  DetectionModel model{nullptr};
  std::string model_yaml;          // the config text the model was built from (saved in checkpoints)
  int64_t yaml_nc = 0;             // the class count of that yaml (or of the weights' own model)
  size_t transferred = 0, total = 0;  // tensors loaded from the weights / tensors in the model
};

// cfg: model yaml path or built-in name; "" uses the yaml inside `weights`.
// weights: "" for random initialisation.
// nc > 0: the data's class count, which the model gets whatever its yaml says; 0 keeps the yaml's.
// The model's names are the weights' when the class count is theirs, else "0", "1", ...
BuiltModel build_model(const std::string& cfg, const std::string& weights, int nc);

// The lines train.py prints about it: the nc override (when there is one) and the transfer count.
std::string describe_build(const BuiltModel& built, const std::string& weights);

// The architecture a Kestrel checkpoint was saved with (its yaml, class count and names), weights
// untouched: the model --resume restores its state into.
BuiltModel checkpoint_architecture(const std::string& path);

// val.py / detect.py: the weights' own model (their class count and names) on `device`, in eval mode,
// Conv+BN fused, channels-last. cfg is only needed for weights that carry no yaml.
DetectionModel load_inference_model(const std::string& weights, const std::string& cfg, const torch::Device& device);
// What load_inference_model does to the model it builds: to `device`, eval, fused, channels-last.
void prepare_for_inference(DetectionModelImpl& model, const torch::Device& device);

// True when `path` is a Kestrel checkpoint (as opposed to a YOLOv5 .pt).
bool is_kestrel_checkpoint(const std::string& path);

}  // namespace kestrel
