// TaskAlignedAssigner (see task_aligned_assigner.h), dense over [bs, boxes, cells] in the
// reference's operation order, so ties in top-k and in the argmax over boxes fall the same way.
#include "train/task_aligned_assigner.h"

#include "eval/bbox_iou.h"

namespace kestrel {

namespace {

// Cells whose centre is strictly inside a box, the box first grown to stride_val where smaller.
torch::Tensor candidates_in_boxes(const AssignerConfig& c, const torch::Tensor& centres, const torch::Tensor& gt,
                                  const torch::Tensor& mask_gt) {
  const torch::Tensor x1 = gt.select(-1, 0), y1 = gt.select(-1, 1), x2 = gt.select(-1, 2), y2 = gt.select(-1, 3);
  const torch::Tensor xy = torch::stack({(x1 + x2) / 2, (y1 + y2) / 2}, -1);
  torch::Tensor wh = torch::stack({x2 - x1, y2 - y1}, -1);
  wh = torch::where((wh < c.stride_val).logical_and(mask_gt.to(torch::kBool)), torch::full({}, c.stride_val, wh.options()), wh);
  const torch::Tensor half = wh / 2;
  const torch::Tensor lt = (xy - half).unsqueeze(2), rb = (xy + half).unsqueeze(2);  // [bs, M, 1, 2]
  const torch::Tensor cx = centres.select(1, 0), cy = centres.select(1, 1);
  return (cx - lt.select(-1, 0) > c.eps)
      .logical_and(cy - lt.select(-1, 1) > c.eps)
      .logical_and(rb.select(-1, 0) - cx > c.eps)
      .logical_and(rb.select(-1, 1) - cy > c.eps);  // [bs, M, N]
}

// The k most aligned cells of each real box, as a 0/1 mask; a cell picked twice (the padding
// boxes' index 0) does not count.
torch::Tensor top_k_cells(const AssignerConfig& c, const torch::Tensor& align, const torch::Tensor& mask_gt) {
  torch::Tensor idx = std::get<1>(torch::topk(align, c.topk, -1, /*largest=*/true));
  idx.masked_fill_(mask_gt.expand({-1, -1, c.topk}).to(torch::kBool).logical_not(), 0);
  torch::Tensor count = torch::zeros(align.sizes(), align.options().dtype(torch::kInt8));
  count.scatter_add_(-1, idx, torch::ones_like(idx, idx.options().dtype(torch::kInt8)));
  count.masked_fill_(count > 1, 0);
  return count;
}

}  // namespace

Assignment assign_targets(const AssignerConfig& c, const torch::Tensor& pd_scores, const torch::Tensor& pd_bboxes,
                          const torch::Tensor& anchor_points, const torch::Tensor& gt_labels,
                          const torch::Tensor& gt_bboxes, const torch::Tensor& mask_gt) {
  torch::NoGradGuard no_grad;
  const int64_t bs = pd_scores.size(0), n_cells = pd_scores.size(1), n_boxes = gt_bboxes.size(1);
  Assignment out;
  if (n_boxes == 0) {
    out.target_bboxes = torch::zeros_like(pd_bboxes);
    out.target_scores = torch::zeros_like(pd_scores);
    out.fg_mask = torch::zeros({bs, n_cells}, pd_scores.options().dtype(torch::kBool));
    out.target_gt_idx = torch::zeros({bs, n_cells}, pd_scores.options().dtype(torch::kLong));
    return out;
  }
  // get_pos_mask: candidates, their alignment, the top k of each box.
  const torch::Tensor in_boxes = candidates_in_boxes(c, anchor_points, gt_bboxes, mask_gt);
  const torch::Tensor valid = in_boxes.logical_and(mask_gt.to(torch::kBool));  // [bs, M, N]
  const torch::Tensor labels = gt_labels.squeeze(-1).to(torch::kLong);          // [bs, M]
  const torch::Tensor box_scores = pd_scores.permute({0, 2, 1}).gather(1, labels.unsqueeze(-1).expand({bs, n_boxes, n_cells}));
  const torch::Tensor ciou = bbox_iou(gt_bboxes.unsqueeze(2), pd_bboxes.unsqueeze(1), IouKind::CIoU, /*xywh=*/false).clamp_(0);
  const torch::Tensor zero = torch::zeros({}, pd_bboxes.options());
  torch::Tensor overlaps = torch::where(valid, ciou, zero);
  torch::Tensor align = torch::where(valid, box_scores.pow(c.alpha) * ciou.pow(c.beta), zero);
  torch::Tensor mask_pos = top_k_cells(c, align, mask_gt).mul_(in_boxes).mul_(mask_gt.to(torch::kInt8));

  // select_highest_overlaps: a cell claimed by several boxes keeps the one it overlaps most.
  const torch::Tensor claimed = mask_pos.sum(-2);
  const torch::Tensor multi = (claimed.unsqueeze(1) > 1).expand({-1, n_boxes, -1});
  const torch::Tensor best_box = std::get<1>(overlaps.max(1));
  const torch::Tensor is_best = torch::zeros_like(mask_pos).scatter_(1, best_box.unsqueeze(1), 1);
  mask_pos = torch::where(multi, is_best, mask_pos);
  auto [fg, gt_idx] = mask_pos.max(-2);

  // get_targets
  const torch::Tensor flat_idx = gt_idx + torch::arange(bs, gt_idx.options()).unsqueeze(-1) * n_boxes;
  const torch::Tensor target_labels = labels.flatten().index({flat_idx}).clamp_(0);
  out.target_bboxes = gt_bboxes.reshape({-1, 4}).index({flat_idx});
  torch::Tensor scores = torch::zeros({bs, n_cells, c.nc}, pd_scores.options().dtype(torch::kInt8));
  scores.scatter_(2, target_labels.unsqueeze(-1), 1);
  scores = scores * (fg.unsqueeze(-1) > 0);

  // Normalise the alignment: each box's best cell gets the box's best overlap.
  align.mul_(mask_pos);
  const torch::Tensor pos_align = std::get<0>(align.max(-1, /*keepdim=*/true));
  overlaps.mul_(mask_pos);
  const torch::Tensor pos_overlaps = std::get<0>(overlaps.max(-1, /*keepdim=*/true));
  align.mul_(pos_overlaps).div_(pos_align + c.eps);
  const torch::Tensor norm_align = std::get<0>(align.max(-2)).unsqueeze(-1);
  out.target_scores = scores * norm_align;
  out.fg_mask = fg.to(torch::kBool);
  out.target_gt_idx = gt_idx;
  return out;
}

}  // namespace kestrel
