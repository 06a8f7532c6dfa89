// Ultralytics' TaskAlignedAssigner (ultralytics/utils/tal.py at the pinned version): which cells
// of the anchor-free head learn which ground-truth box. A cell is a candidate for a box when its
// centre lies inside it (boxes under the middle stride grown to it); among candidates the top k by
// alignment = class score^alpha x CIoU^beta are positives; a cell claimed by several boxes keeps the
// one it overlaps most. Targets: the box, and its class scored by the normalised alignment.
#pragma once
#include <torch/torch.h>

#include <vector>

namespace kestrel {

struct AssignerConfig {
  int64_t topk = 10;
  int64_t nc = 80;
  double alpha = 0.5, beta = 6.0;
  double stride_val = 16;  // boxes narrower or lower than this grow to it when finding candidates
  double eps = 1e-9;
};

struct Assignment {
  torch::Tensor target_bboxes;  // [bs, N, 4] xyxy pixels of each cell's box (box 0's where none)
  torch::Tensor target_scores;  // [bs, N, nc] float: the normalised alignment at the box's class
  torch::Tensor fg_mask;        // [bs, N] bool: cells that learn a box
  torch::Tensor target_gt_idx;  // [bs, N] int64: index of the box among the image's boxes
};

// All inputs detached. pd_scores [bs, N, nc] probabilities; pd_bboxes [bs, N, 4] xyxy pixels;
// anchor_points [N, 2] cell centres in pixels; gt_labels [bs, M, 1]; gt_bboxes [bs, M, 4] xyxy
// pixels; mask_gt [bs, M, 1] (real boxes, not padding).
Assignment assign_targets(const AssignerConfig& config, const torch::Tensor& pd_scores, const torch::Tensor& pd_bboxes,
                          const torch::Tensor& anchor_points, const torch::Tensor& gt_labels,
                          const torch::Tensor& gt_bboxes, const torch::Tensor& mask_gt);

}  // namespace kestrel
