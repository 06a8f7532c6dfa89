// Training hyperparameters with YOLOv5's hyp.yaml keys (and Ultralytics' `dfl`); defaults are
// hyp.scratch-low.yaml, Ultralytics' family starts from its own (ultralytics_hyp). Torch-free so that
// the augmentation code can read the same struct the trainer uses.
#pragma once
#include <string>

namespace kestrel {

struct Hyp {
  double lr0 = 0.01, lrf = 0.01, momentum = 0.937, weight_decay = 0.0005;
  double warmup_epochs = 3.0, warmup_momentum = 0.8, warmup_bias_lr = 0.1;
  double box = 0.05, cls = 0.5, cls_pw = 1.0, obj = 1.0, obj_pw = 1.0, iou_t = 0.20, anchor_t = 4.0;
  double fl_gamma = 0.0;
  double dfl = 1.5;  // Distribution Focal Loss gain (the anchor-free head only)
  double hsv_h = 0.015, hsv_s = 0.7, hsv_v = 0.4;
  double degrees = 0.0, translate = 0.1, scale = 0.5, shear = 0.0, perspective = 0.0;
  double flipud = 0.0, fliplr = 0.5, mosaic = 1.0, mixup = 0.0, copy_paste = 0.0;
  double label_smoothing = 0.0;
};

// Ultralytics' cfg/default.yaml values: the gains box 7.5, cls 0.5, dfl 1.5 apply as they are (YOLOv5
// rescales its own by levels, classes and image size); schedule and augmentation values equal
// hyp.scratch-low's.
Hyp ultralytics_hyp();

// Reads a hyp.yaml over `base`: keys not present keep base's values, unknown keys are an error naming
// the file and key. Throws std::runtime_error.
Hyp load_hyp(const std::string& path, const Hyp& base = {});

}  // namespace kestrel
