// YOLOv5 v7.0 non_max_suppression (utils/general.py) with torchvision.ops.nms's exact greedy
// semantics, on raw float arrays (LibTorch C++ has no torchvision); without objectness, Ultralytics'
// (utils/nms.py), which differs from it in that alone.
//
// Per image: rows with obj > conf_thres; scores obj*cls (float32); one candidate per (row, class)
// above conf_thres in row-major order (multi-label) or the best class only; optional class filter;
// a stable sort by score, keeping the first max_nms; greedy suppression of IoU > iou_thres on boxes
// offset by class * 7680 in float32 (YOLOv5's batched-NMS trick; the offset's float32 rounding
// changes IoUs slightly for high classes, and a per-class NMS on raw boxes would not reproduce
// that); then the first max_det survivors. For speed, boxes are only compared within their class
// when the coordinates prove that offset boxes of different classes cannot intersect (IoU 0); with
// huge boxes they can, and then every pair is compared, as YOLOv5 does. Ties in score keep
// candidate order (stable sort). Inputs are processed in float32 on the CPU.
//
// YOLOv5 also gives up on the remaining images of a batch once 0.5 + 0.05*bs seconds have passed.
// That makes results depend on machine speed and load, so here it is off unless asked for.
#pragma once
#include <torch/torch.h>

#include <vector>

namespace kestrel {

struct NmsOptions {
  double conf_thres = 0.25;
  double iou_thres = 0.45;
  std::vector<int> classes;  // keep only these classes; empty keeps all
  bool agnostic = false;     // suppress across classes
  bool multi_label = false;  // one candidate per class above conf_thres (ignored when nc == 1)
  int max_det = 300;
  int max_nms = 30000;       // candidates kept (highest scores) before suppression
  bool time_limit = false;   // YOLOv5's speed-dependent abort (see above)
  // Rows carry an objectness score (YOLOv5: x, y, w, h, obj, classes). Off for the anchor-free
  // head (x, y, w, h, classes): class scores are the confidences, Ultralytics' non_max_suppression.
  bool objectness = true;
};

// Validation's settings: val.py's (conf 0.001, IoU 0.6, multi-label, 300 detections) or, for the
// anchor-free head, Ultralytics' DetectionValidator's (the same at IoU 0.7, without objectness).
NmsOptions val_nms_options(bool anchor_free = false);

// Prediction's: detect.py's (conf 0.25, IoU 0.45, 1000 detections) or Ultralytics' predict
// defaults (conf 0.25, IoU 0.7, 300 detections, without objectness).
NmsOptions predict_nms_options(bool anchor_free = false);

// prediction: [bs, N, 5+nc] decoded model output (x, y, w, h in pixels, obj, class scores), or
// [bs, N, 4+nc] without objectness.
// Returns per image a float32 [k,6] tensor (x1, y1, x2, y2, conf, cls), highest conf first, on
// prediction's device.
std::vector<torch::Tensor> non_max_suppression(const torch::Tensor& prediction,
                                               const NmsOptions& options);

}  // namespace kestrel
