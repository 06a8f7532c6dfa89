// Training hyperparameters with YOLOv5's hyp.yaml keys; defaults are hyp.scratch-low.yaml.
// Torch-free so that the augmentation code can read the same struct the trainer uses.
#pragma once
#include <string>

namespace kestrel {

struct Hyp {
  double lr0 = 0.01, lrf = 0.01, momentum = 0.937, weight_decay = 0.0005;
  double warmup_epochs = 3.0, warmup_momentum = 0.8, warmup_bias_lr = 0.1;
  double box = 0.05, cls = 0.5, cls_pw = 1.0, obj = 1.0, obj_pw = 1.0, iou_t = 0.20, anchor_t = 4.0;
  double fl_gamma = 0.0;
  double hsv_h = 0.015, hsv_s = 0.7, hsv_v = 0.4;
  double degrees = 0.0, translate = 0.1, scale = 0.5, shear = 0.0, perspective = 0.0;
  double flipud = 0.0, fliplr = 0.5, mosaic = 1.0, mixup = 0.0, copy_paste = 0.0;
  double label_smoothing = 0.0;
};

// Reads a hyp.yaml; keys not present keep their defaults, unknown keys are an error naming the
// file and key. Throws std::runtime_error.
Hyp load_hyp(const std::string& path);

}  // namespace kestrel
