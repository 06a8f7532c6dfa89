// hyp.yaml reader (YOLOv5's keys and Ultralytics' dfl) and Ultralytics' defaults.
#include "core/hyp.h"

#include <yaml-cpp/yaml.h>

#include <map>
#include <stdexcept>

namespace kestrel {

Hyp ultralytics_hyp() {
  Hyp h;
  h.box = 7.5, h.cls = 0.5, h.dfl = 1.5;
  return h;
}

Hyp load_hyp(const std::string& path, const Hyp& base) {
  Hyp h = base;
  const std::map<std::string, double*> keys = {
      {"lr0", &h.lr0}, {"lrf", &h.lrf}, {"momentum", &h.momentum}, {"weight_decay", &h.weight_decay},
      {"warmup_epochs", &h.warmup_epochs}, {"warmup_momentum", &h.warmup_momentum},
      {"warmup_bias_lr", &h.warmup_bias_lr}, {"box", &h.box}, {"cls", &h.cls}, {"cls_pw", &h.cls_pw},
      {"obj", &h.obj}, {"obj_pw", &h.obj_pw}, {"iou_t", &h.iou_t}, {"anchor_t", &h.anchor_t},
      {"fl_gamma", &h.fl_gamma}, {"dfl", &h.dfl}, {"hsv_h", &h.hsv_h}, {"hsv_s", &h.hsv_s}, {"hsv_v", &h.hsv_v},
      {"degrees", &h.degrees}, {"translate", &h.translate}, {"scale", &h.scale}, {"shear", &h.shear},
      {"perspective", &h.perspective}, {"flipud", &h.flipud}, {"fliplr", &h.fliplr},
      {"mosaic", &h.mosaic}, {"mixup", &h.mixup}, {"copy_paste", &h.copy_paste},
      {"label_smoothing", &h.label_smoothing}};
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(path + ": cannot read hyp yaml: " + e.what());
  }
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    auto it = keys.find(key);
    if (it == keys.end())
      throw std::runtime_error(path + ":" + std::to_string(kv.first.Mark().line + 1) + ": unknown hyp key '" + key + "'");
    try {
      *it->second = kv.second.as<double>();
    } catch (const YAML::Exception&) {
      throw std::runtime_error(path + ":" + std::to_string(kv.second.Mark().line + 1) + ": hyp '" + key + "' is not a number");
    }
  }
  return h;
}

}  // namespace kestrel
