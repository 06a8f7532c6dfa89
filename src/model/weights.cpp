// Model construction from cfg and/or weights, with train.py's nc and transfer rules.
#include "model/weights.h"

#include <optional>

#include "model/model_config.h"
#include "model/pt_reader.h"
#include "model/checkpoint.h"

namespace kestrel {

namespace {

ModelConfig checkpoint_config(const std::string& path, const CheckpointMeta& meta) {
  ModelConfig config = parse_model_config(meta.model_yaml, path);
  config.nc = meta.nc;
  if (!meta.model_name.empty()) config.name = meta.model_name;
  config.pruned_shapes = meta.pruned_shapes;
  return config;
}

WeightsSource read_kestrel_weights(const std::string& path) {
  const CheckpointMeta meta = load_checkpoint(path, nullptr, nullptr, nullptr);
  WeightsSource src;
  src.config = checkpoint_config(path, meta);
  src.names = meta.names;
  DetectionModel saved(src.config, src.config.nc);
  // The EMA weights are the ones that were validated (and chose best.pt).
  load_checkpoint(path, meta.has_ema ? nullptr : saved.get(), meta.has_ema ? saved.get() : nullptr, nullptr);
  src.state = saved->state();
  return src;
}

WeightsSource read_yolov5_weights(const std::string& path) {
  PtCheckpoint ckpt = read_pt_checkpoint(path);
  if (ckpt.model_yaml.empty()) throw std::runtime_error(path + ": carries no model yaml; give --cfg");
  WeightsSource src;
  src.config = parse_model_config(ckpt.model_yaml, path);
  if (ckpt.nc > 0) src.config.nc = ckpt.nc;
  src.names = std::move(ckpt.names);
  src.state = std::move(ckpt.state);
  return src;
}

}  // namespace

bool is_kestrel_checkpoint(const std::string& path) {
  try {
    load_checkpoint(path, nullptr, nullptr, nullptr);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

WeightsSource read_weights(const std::string& path) {
  return is_kestrel_checkpoint(path) ? read_kestrel_weights(path) : read_yolov5_weights(path);
}

BuiltModel checkpoint_architecture(const std::string& path) {
  const CheckpointMeta meta = load_checkpoint(path, nullptr, nullptr, nullptr);
  const ModelConfig config = checkpoint_config(path, meta);
  BuiltModel out;
  out.model = DetectionModel(config, config.nc);
  if (meta.names.size() == static_cast<size_t>(config.nc)) out.model->set_names(meta.names);
  out.model_yaml = meta.model_yaml;
  out.yaml_nc = config.nc;
  out.total = out.model->state().size();
  return out;
}

BuiltModel build_model(const std::string& cfg, const std::string& weights, int nc) {
  std::optional<WeightsSource> src;
  if (!weights.empty()) src = read_weights(weights);
  if (cfg.empty() && !src) throw std::runtime_error("no model: give --cfg (e.g. yolov5n.yaml) or --weights");
  const ModelConfig config = cfg.empty() ? src->config : load_model_config(cfg);
  // Without a dataset, the model keeps the class count of what it was trained as.
  const int64_t model_nc = nc > 0 ? nc : src ? src->config.nc : config.nc;

  BuiltModel out;
  out.yaml_nc = config.nc;
  out.model_yaml = config.text;
  out.model = DetectionModel(config, model_nc);
  out.total = out.model->state().size();
  if (src) {
    const std::vector<std::string> exclude = cfg.empty() ? std::vector<std::string>{} : std::vector<std::string>{"anchor"};
    out.transferred = out.model->load_matching(src->state, exclude);
    if (model_nc == src->config.nc && src->names.size() == static_cast<size_t>(model_nc))
      out.model->set_names(src->names);
  }
  return out;
}

DetectionModel load_inference_model(const std::string& weights, const std::string& cfg, const torch::Device& device) {
  DetectionModel model = build_model(cfg, weights, 0).model;
  prepare_for_inference(*model, device);
  return model;
}

void prepare_for_inference(DetectionModelImpl& model, const torch::Device& device) {
  model.to(device);
  model.eval();
  model.fuse();
  model.set_memory_format(torch::MemoryFormat::ChannelsLast);
}

std::string describe_build(const BuiltModel& built, const std::string& weights) {
  std::string lines;
  if (built.yaml_nc != built.model->nc())
    lines += "Overriding model.yaml nc=" + std::to_string(built.yaml_nc) + " with nc=" + std::to_string(built.model->nc()) + "\n";
  if (!weights.empty())
    lines += "Transferred " + std::to_string(built.transferred) + "/" + std::to_string(built.total) + " items from " + weights + "\n";
  return lines;
}

}  // namespace kestrel
