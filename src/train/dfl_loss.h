// Ultralytics' v8DetectionLoss (ultralytics/utils/loss.py at the pinned version) for the anchor-free
// head of YOLOv8, YOLO11 and YOLOv5u: cells assigned by the TaskAlignedAssigner; CIoU box loss and
// Distribution Focal Loss on each side's reg_max bins, both weighted by the cell's target score;
// BCE on every class logit against the aligned targets; all divided by the target scores' sum.
#pragma once
#include <torch/torch.h>

#include <utility>
#include <vector>

#include "train/task_aligned_assigner.h"

namespace kestrel {

struct DflLossConfig {
  int64_t nc = 80, reg_max = 16;
  std::vector<double> strides{8, 16, 32};
  double box = 7.5, cls = 0.5, dfl = 1.5;  // Ultralytics' default gains, applied as they are
  int64_t topk = 10;
  double alpha = 0.5, beta = 6.0;
};

class DflDetectionLoss {
 public:
  explicit DflDetectionLoss(DflLossConfig config);

  // raw: per level [bs, 4 x reg_max + nc, ny, nx] (the head's outputs); targets: [n, 6] (image,
  // class, x, y, w, h) with xywh normalized to the image, whose size is the first level's times its
  // stride. Returns ((box + cls + dfl) x bs as shape [1], detached [box, cls, dfl]), as YOLOv5's
  // loss does; Ultralytics returns the three terms x bs and backpropagates their sum, the same.
  std::pair<torch::Tensor, torch::Tensor> operator()(const std::vector<torch::Tensor>& raw, const torch::Tensor& targets,
                                                     Assignment* assignment = nullptr) const;

  const DflLossConfig& config() const { return config_; }

 private:
  DflLossConfig config_;
  AssignerConfig assigner_;
};

}  // namespace kestrel
