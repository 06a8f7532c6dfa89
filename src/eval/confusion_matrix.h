// utils/metrics.py ConfusionMatrix (YOLOv5 v7.0): detections above conf 0.25 matched to labels at
// IoU > 0.45 (each label and each detection in at most one pair, the highest IoU first); a matched
// pair counts at [detected class][true class], an unmatched label at [background][true class], an
// unmatched detection at [detected class][background] (only when the image had some match).
#pragma once
#include <torch/torch.h>

#include <vector>

namespace kestrel {

class ConfusionMatrix {
 public:
  explicit ConfusionMatrix(int nc, double conf = 0.25, double iou_thres = 0.45);
  // detections [n,6] (x1, y1, x2, y2, conf, cls), labels [m,5] (cls, x1, y1, x2, y2), same pixels.
  void process_batch(const torch::Tensor& detections, const torch::Tensor& labels);
  // An image without detections: every label is a missed object (val.py's detections=None call).
  void add_missed(const torch::Tensor& label_classes);
  int nc() const { return nc_; }
  // (nc+1) x (nc+1), row-major [predicted][true]; index nc is background.
  const std::vector<double>& matrix() const { return matrix_; }
  double at(int predicted, int truth) const { return matrix_[predicted * (nc_ + 1) + truth]; }

 private:
  void add(int predicted, int truth) { matrix_[predicted * (nc_ + 1) + truth] += 1; }
  int nc_;
  double conf_, iou_thres_;
  std::vector<double> matrix_;
};

}  // namespace kestrel
