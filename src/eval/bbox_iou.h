// Element-wise IoU and its GIoU/DIoU/CIoU variants between paired boxes, with YOLOv5 v7.0's
// (utils/metrics.py bbox_iou) exact arithmetic, so that values and gradients match the reference.
#pragma once
#include <torch/torch.h>

namespace kestrel {

enum class IouKind { IoU, GIoU, DIoU, CIoU };

// box1 and box2 are [..., 4] with matching (or broadcastable) leading shapes; row k of box1 pairs
// with row k of box2. xywh: centre x, y, width, height; otherwise x1, y1, x2, y2 corners.
// Returns [...] (the last dimension dropped). Differentiable w.r.t. both boxes; for CIoU the
// aspect-ratio weight alpha is a constant in backward, as in YOLOv5.
// Quirks kept on purpose: in corner mode eps is added to the heights only; in xywh mode w and h
// are used as given.
torch::Tensor bbox_iou(const torch::Tensor& box1, const torch::Tensor& box2,
                       IouKind kind = IouKind::IoU, bool xywh = true, double eps = 1e-7);

}  // namespace kestrel
