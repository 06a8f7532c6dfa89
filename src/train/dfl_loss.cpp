// v8DetectionLoss (see dfl_loss.h), in the reference's operation order.
#include "train/dfl_loss.h"

#include "eval/bbox_iou.h"

namespace kestrel {

namespace {

// Cell centres (x + 0.5, y + 0.5) in grid units and each cell's stride, level after level.
std::pair<torch::Tensor, torch::Tensor> cell_centres(const std::vector<torch::Tensor>& raw, const std::vector<double>& strides) {
  std::vector<torch::Tensor> points, cell_strides;
  const auto opts = raw[0].options().dtype(torch::kFloat);
  for (size_t i = 0; i < raw.size(); ++i) {
    const int64_t h = raw[i].size(2), w = raw[i].size(3);
    const torch::Tensor sx = (torch::arange(w, opts) + 0.5).view({1, w}).expand({h, w});
    const torch::Tensor sy = (torch::arange(h, opts) + 0.5).view({h, 1}).expand({h, w});
    points.push_back(torch::stack({sx, sy}, -1).view({-1, 2}));
    cell_strides.push_back(torch::full({h * w, 1}, strides[i], opts));
  }
  return {torch::cat(points), torch::cat(cell_strides)};
}

// [n, 6] rows -> [bs, most boxes in an image, 5] (class, xyxy pixels), zero-padded.
torch::Tensor targets_per_image(const torch::Tensor& targets, int64_t bs, const torch::Tensor& scale) {
  const int64_t n = targets.size(0);
  if (n == 0) return torch::zeros({bs, 0, 5}, targets.options());
  const torch::Tensor image = targets.select(1, 0).to(torch::kLong);
  const torch::Tensor counts = torch::bincount(image, {}, bs);
  const int64_t most = counts.max().item<int64_t>();
  torch::Tensor out = torch::zeros({bs, most, 5}, targets.options());
  const torch::Tensor offsets = torch::cat({torch::zeros({1}, counts.options()), counts.cumsum(0)});
  const torch::Tensor within = torch::arange(n, image.options()) - offsets.index({image});
  out.index_put_({image, within}, targets.slice(1, 1));
  const torch::Tensor xywh = out.slice(2, 1, 5).mul(scale);
  const torch::Tensor xy = xywh.slice(2, 0, 2), half = xywh.slice(2, 2, 4) / 2;
  out.slice(2, 1, 5).copy_(torch::cat({xy - half, xy + half}, 2));
  return out;
}

// Distribution Focal Loss of each side: the two bins around the target distance, weighted by
// nearness. pred [k, 4, reg_max] logits, target [k, 4] in bins; returns [k, 1], the sides' mean.
torch::Tensor distribution_focal_loss(const torch::Tensor& pred, torch::Tensor target, int64_t reg_max) {
  target = target.clamp(0, static_cast<double>(reg_max) - 1 - 0.01);
  const torch::Tensor left = target.to(torch::kLong), right = left + 1;
  const torch::Tensor w_left = right - target, w_right = 1 - w_left;
  const torch::Tensor logp = torch::log_softmax(pred.reshape({-1, reg_max}), 1);
  const torch::Tensor loss = -(logp.gather(1, left.view({-1, 1})).view(left.sizes()) * w_left +
                               logp.gather(1, right.view({-1, 1})).view(left.sizes()) * w_right);
  return loss.mean(-1, /*keepdim=*/true);
}

}  // namespace

DflDetectionLoss::DflDetectionLoss(DflLossConfig config) : config_(std::move(config)) {
  assigner_.topk = config_.topk, assigner_.nc = config_.nc, assigner_.alpha = config_.alpha, assigner_.beta = config_.beta;
  assigner_.stride_val = config_.strides.size() > 1 ? config_.strides[1] : config_.strides[0];
}

std::pair<torch::Tensor, torch::Tensor> DflDetectionLoss::operator()(const std::vector<torch::Tensor>& raw,
                                                                      const torch::Tensor& targets,
                                                                      Assignment* assignment) const {
  const int64_t bs = raw[0].size(0), nc = config_.nc, rm = config_.reg_max;
  std::vector<torch::Tensor> flat;
  for (const auto& r : raw) flat.push_back(r.reshape({bs, 4 * rm + nc, -1}));
  const torch::Tensor all = torch::cat(flat, 2).permute({0, 2, 1});  // [bs, N, 4 reg_max + nc]
  const torch::Tensor pred_dist = all.slice(2, 0, 4 * rm), pred_scores = all.slice(2, 4 * rm);
  const auto [centres, cell_stride] = cell_centres(raw, config_.strides);
  const double h = static_cast<double>(raw[0].size(2)) * config_.strides[0], w = static_cast<double>(raw[0].size(3)) * config_.strides[0];
  const torch::Tensor scale = torch::tensor({w, h, w, h}, all.options());
  const torch::Tensor gt = targets_per_image(targets.to(all.device(), torch::kFloat), bs, scale);
  const torch::Tensor gt_labels = gt.slice(2, 0, 1), gt_bboxes = gt.slice(2, 1, 5);
  const torch::Tensor mask_gt = gt_bboxes.sum(2, /*keepdim=*/true).gt(0.0);

  // Boxes from the expected distance of each side (grid units, xyxy around the cell centre).
  const torch::Tensor proj = torch::arange(rm, all.options());
  const torch::Tensor dist = pred_dist.view({bs, -1, 4, rm}).softmax(3).matmul(proj);
  const torch::Tensor pred_bboxes = torch::cat({centres - dist.slice(2, 0, 2), centres + dist.slice(2, 2, 4)}, 2);

  Assignment a = assign_targets(assigner_, pred_scores.detach().sigmoid(), pred_bboxes.detach() * cell_stride,
                                centres * cell_stride, gt_labels, gt_bboxes, mask_gt);
  const torch::Tensor score_sum = a.target_scores.sum().clamp(1);
  torch::Tensor loss_cls = torch::binary_cross_entropy_with_logits(pred_scores, a.target_scores, {}, {}, at::Reduction::None).sum() / score_sum;

  torch::Tensor loss_box = torch::zeros({}, all.options()), loss_dfl = torch::zeros({}, all.options());
  const torch::Tensor fg = a.fg_mask;
  if (fg.any().item<bool>()) {
    const torch::Tensor target_boxes = a.target_bboxes / cell_stride;  // grid units
    const torch::Tensor weight = a.target_scores.index({fg}).sum(-1, /*keepdim=*/true);
    const torch::Tensor iou = bbox_iou(pred_bboxes.index({fg}), target_boxes.index({fg}), IouKind::CIoU, /*xywh=*/false).unsqueeze(-1);
    loss_box = ((1.0 - iou) * weight).sum() / score_sum;
    const torch::Tensor ltrb = torch::cat({centres - target_boxes.slice(2, 0, 2), target_boxes.slice(2, 2, 4) - centres}, 2)
                                   .clamp(0, static_cast<double>(rm) - 1 - 0.01);
    loss_dfl = (distribution_focal_loss(pred_dist.index({fg}), ltrb.index({fg}), rm) * weight).sum() / score_sum;
  }
  const torch::Tensor terms = torch::stack({loss_box * config_.box, loss_cls * config_.cls, loss_dfl * config_.dfl});
  if (assignment) *assignment = std::move(a);
  return {(terms.sum() * static_cast<double>(bs)).view({1}), terms.detach()};
}

}  // namespace kestrel
