// YOLOv5 v7.0 training loss (utils/loss.py ComputeLoss): target assignment to anchors and grid
// cells, CIoU box loss, objectness BCE against the detached IoU, class BCE with label smoothing,
// optional focal loss. Built from plain values so it does not depend on the model code.
#pragma once
#include <torch/torch.h>

#include <utility>
#include <vector>

#include "core/hyp.h"

namespace kestrel {

struct LossConfig {
  int nc = 80;  // number of classes
  int nl = 3;   // detection levels
  int na = 3;   // anchors per level
  // [nl, na, 2] float32 in grid units (pixels / stride) of each level; its device is the one
  // the loss runs on (p must live there; targets are moved there).
  torch::Tensor anchors;
  double box = 0.05, obj = 1.0, cls = 0.5;  // loss gains, already scaled (see loss_config_from_hyp)
  double cls_pw = 1.0, obj_pw = 1.0;        // BCE positive weights
  double anchor_t = 4.0;                    // anchor match: max(r, 1/r) < anchor_t
  double label_smoothing = 0.0;
  double fl_gamma = 0.0;                    // focal loss when > 0
  std::vector<double> balance;              // objectness weight per level
};

// YOLOv5's per-level objectness balance: [4, 1, 0.4] for 3 levels, else the P3-P7 list.
std::vector<double> default_balance(int nl);

// The gains as train.py rescales them: box *= 3/nl, cls *= nc/80 * 3/nl,
// obj *= (imgsz/640)^2 * 3/nl; the other fields copied from hyp, balance = default_balance(nl).
LossConfig loss_config_from_hyp(const Hyp& hyp, int nc, int nl, int imgsz, torch::Tensor anchors);

// build_targets output for one level. Entry order is YOLOv5's: offset block (centre, left, up,
// right, down), then anchor, then target.
struct LevelTargets {
  torch::Tensor tcls;  // [k] int64
  torch::Tensor tbox;  // [k, 4] float32: x, y offset within the (clamped) cell, w, h in grid units
  torch::Tensor b, a, gj, gi;  // [k] int64: image, anchor, cell row, cell column
  torch::Tensor anch;  // [k, 2] float32 anchor w, h in grid units
};

// Optional per-level diagnostics of one loss evaluation (all detached).
struct LossBreakdown {
  std::vector<torch::Tensor> ciou;          // [k] CIoU of each assigned entry
  std::vector<torch::Tensor> obj_bce_mean;  // 0-d objectness BCE mean, before balance and gain
};

class YoloLoss {
 public:
  explicit YoloLoss(LossConfig config);

  // p: per level [bs, na, ny, nx, 5+nc] raw logits (x, y, w, h, obj, classes).
  // targets: [n, 6] (image index, class, x, y, w, h), xywh normalized to 0..1.
  // Returns ((lbox+lobj+lcls)*bs as shape [1], detached [lbox, lobj, lcls]). Differentiable w.r.t. p.
  std::pair<torch::Tensor, torch::Tensor> operator()(const std::vector<torch::Tensor>& p,
                                                     const torch::Tensor& targets,
                                                     LossBreakdown* breakdown = nullptr) const;

  // Assigns every target to the anchors it matches and to its cell plus up to two neighbour cells.
  std::vector<LevelTargets> build_targets(const std::vector<torch::Tensor>& p,
                                          const torch::Tensor& targets) const;

  const LossConfig& config() const { return config_; }

 private:
  // Mean BCE-with-logits (focal-modulated when fl_gamma > 0), as YOLOv5's BCEcls/BCEobj.
  torch::Tensor bce_mean(const torch::Tensor& logits, const torch::Tensor& target,
                         const torch::Tensor& pos_weight) const;

  LossConfig config_;
  double cp_, cn_;                             // smoothed positive / negative class targets
  torch::Tensor cls_pos_weight_, obj_pos_weight_;  // shape [1], on the anchors' device
  torch::Tensor neighbour_offsets_;            // [5, 2] cell offsets (0, left, up, right, down) * 0.5
};

}  // namespace kestrel
