// Model construction from cfg and/or weights.
#include "train/weights.h"

#include <iostream>

#include "model/model_config.h"
#include "model/pt_reader.h"
#include "train/checkpoint.h"

namespace kestrel {

bool is_kestrel_checkpoint(const std::string& path) {
  try {
    load_checkpoint(path, nullptr, nullptr, nullptr);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

BuiltModel build_model(const std::string& cfg, const std::string& weights, int nc) {
  BuiltModel out;
  std::optional<int64_t> nc_override;
  if (nc > 0) nc_override = nc;
  if (weights.empty()) {
    if (cfg.empty()) throw std::runtime_error("no model: give --cfg (e.g. yolov5n.yaml) or --weights");
    const ModelConfig config = load_model_config(cfg);
    out.model = DetectionModel(config, nc_override);
    out.model_yaml = config.text;
    out.total = out.model->state().size();
    return out;
  }
  if (is_kestrel_checkpoint(weights)) {
    const CheckpointMeta meta = load_checkpoint(weights, nullptr, nullptr, nullptr);
    const ModelConfig config = cfg.empty() ? parse_model_config(meta.model_yaml, weights) : load_model_config(cfg);
    // Load into a model of the checkpoint's own shape, then transfer what matches the target.
    DetectionModel saved(parse_model_config(meta.model_yaml, weights), static_cast<int64_t>(meta.names.size()));
    load_checkpoint(weights, saved.get(), nullptr, nullptr);
    out.model = DetectionModel(config, nc_override);
    out.transferred = out.model->load_matching(saved->state());
    out.names = meta.names;
    out.model_yaml = config.text;
  } else {
    PtCheckpoint ckpt = read_pt_checkpoint(weights);
    if (cfg.empty() && ckpt.model_yaml.empty()) throw std::runtime_error(weights + ": carries no model yaml; give --cfg");
    const ModelConfig config = cfg.empty() ? parse_model_config(ckpt.model_yaml, weights) : load_model_config(cfg);
    out.model = DetectionModel(config, nc_override ? nc_override : std::optional<int64_t>(ckpt.nc > 0 ? ckpt.nc : config.nc));
    out.transferred = out.model->load_matching(ckpt.state);
    out.names = ckpt.names;
    out.model_yaml = config.text;
  }
  out.total = out.model->state().size();
  if (!out.names.empty()) out.model->set_names(out.names);
  return out;
}

}  // namespace kestrel
