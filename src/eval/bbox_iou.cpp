// Element-wise IoU/GIoU/DIoU/CIoU (YOLOv5 v7.0 utils/metrics.py bbox_iou). The operation order
// follows YOLOv5's so that float32 rounding and autograd tie rules (min/max/clamp) agree.
#include "eval/bbox_iou.h"

#include <cmath>

namespace kestrel {

namespace {

struct Corners {
  torch::Tensor x1, y1, x2, y2, w, h;
};

Corners corners(const torch::Tensor& box, bool xywh, double eps) {
  Corners c;
  if (xywh) {
    c.w = box.select(-1, 2);
    c.h = box.select(-1, 3);
    const auto half_w = c.w / 2;
    const auto half_h = c.h / 2;
    const auto x = box.select(-1, 0);
    const auto y = box.select(-1, 1);
    c.x1 = x - half_w;
    c.x2 = x + half_w;
    c.y1 = y - half_h;
    c.y2 = y + half_h;
  } else {
    c.x1 = box.select(-1, 0);
    c.y1 = box.select(-1, 1);
    c.x2 = box.select(-1, 2);
    c.y2 = box.select(-1, 3);
    c.w = c.x2 - c.x1;
    c.h = c.y2 - c.y1 + eps;  // YOLOv5 guards only the height (it is a divisor in CIoU)
  }
  return c;
}

}  // namespace

torch::Tensor bbox_iou(const torch::Tensor& box1, const torch::Tensor& box2, IouKind kind,
                       bool xywh, double eps) {
  const Corners b1 = corners(box1, xywh, eps);
  const Corners b2 = corners(box2, xywh, eps);

  const auto inter = (torch::minimum(b1.x2, b2.x2) - torch::maximum(b1.x1, b2.x1)).clamp_min(0) *
                     (torch::minimum(b1.y2, b2.y2) - torch::maximum(b1.y1, b2.y1)).clamp_min(0);
  const auto union_area = b1.w * b1.h + b2.w * b2.h - inter + eps;
  const auto iou = inter / union_area;
  if (kind == IouKind::IoU) return iou;

  // Smallest enclosing box.
  const auto cw = torch::maximum(b1.x2, b2.x2) - torch::minimum(b1.x1, b2.x1);
  const auto ch = torch::maximum(b1.y2, b2.y2) - torch::minimum(b1.y1, b2.y1);
  if (kind == IouKind::GIoU) {
    const auto c_area = cw * ch + eps;
    return iou - (c_area - union_area) / c_area;
  }

  const auto c2 = cw.pow(2) + ch.pow(2) + eps;  // enclosing diagonal squared
  const auto rho2 =
      ((b2.x1 + b2.x2 - b1.x1 - b1.x2).pow(2) + (b2.y1 + b2.y2 - b1.y1 - b1.y2).pow(2)) / 4;
  if (kind == IouKind::DIoU) return iou - rho2 / c2;

  const double four_over_pi2 = 4 / (M_PI * M_PI);
  const auto v = four_over_pi2 * (torch::atan(b2.w / b2.h) - torch::atan(b1.w / b1.h)).pow(2);
  torch::Tensor alpha;
  {
    torch::NoGradGuard no_grad;  // YOLOv5 treats the trade-off weight as a constant
    alpha = v / (v - iou + (1 + eps));
  }
  return iou - (rho2 / c2 + v * alpha);
}

}  // namespace kestrel
