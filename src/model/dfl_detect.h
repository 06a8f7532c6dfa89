// Ultralytics' anchor-free Detect head (ultralytics/nn/modules/head.py at the pinned version) for
// YOLOv8, YOLO11 and YOLOv5u: per level a box branch giving 4 x reg_max bins (a distribution over
// each side's distance from the cell centre, read out by DFL's expectation) and a class branch.
// Submodule names follow Ultralytics' (cv2 box, cv3 class, dfl), so state-dict keys match.
#pragma once
#include "model/layers.h"

namespace kestrel {

// The expectation of each side's distance: softmax over its reg_max bins, dotted with 0..reg_max-1
// by a fixed 1x1 conv (a parameter that never trains, as in Ultralytics).
class DflImpl : public torch::nn::Module {
 public:
  explicit DflImpl(int64_t reg_max);
  // [bs, 4 * reg_max, N] -> [bs, 4, N]
  torch::Tensor forward(const torch::Tensor& bins) const;

  torch::nn::Conv2d conv{nullptr};
  int64_t reg_max;
};
TORCH_MODULE(Dfl);

class DflDetectImpl : public DetectHeadImpl {
 public:
  explicit DflDetectImpl(const DflDetectArgs& args);
  // Raw per-level outputs [bs, 4 * reg_max + nc, ny, nx]: box bins, then class logits.
  std::vector<torch::Tensor> forward(torch::ArrayRef<torch::Tensor> inputs) override;
  // [bs, N, 4 + nc]: xywh in input pixels (around cell centres gx + 0.5, gy + 0.5), sigmoid class
  // scores; rows ordered level, gy, gx. Ultralytics' inference output transposed.
  torch::Tensor decode(const std::vector<torch::Tensor>& raw) const override;
  void set_strides(const std::vector<double>& strides) override;
  // bias_init(): box bins 2.0, class logits log(5 / nc / (640 / stride)^2).
  void initialize_biases() override;
  std::vector<torch::nn::Conv2d> output_convs() const override;

  int64_t reg_max;
  torch::nn::ModuleList cv2{nullptr}, cv3{nullptr};  // per level: box branch, class branch
  std::vector<Chain> box_branches, class_branches;
  std::vector<torch::nn::Conv2d> box_outputs, class_outputs;  // each branch's last (biased) conv
  Dfl dfl{nullptr};
};
TORCH_MODULE(DflDetect);

}  // namespace kestrel
