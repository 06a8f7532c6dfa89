// Box conversions, pairwise IoU and letterbox-to-original rescaling (YOLOv5 v7.0 semantics).
#include "eval/boxes.h"

#include <algorithm>
#include <cmath>

namespace kestrel {

using torch::indexing::Slice;

torch::Tensor xywh2xyxy(const torch::Tensor& xywh) {
  auto out = torch::empty_like(xywh);
  const auto x = xywh.select(-1, 0), y = xywh.select(-1, 1);
  const auto half_w = xywh.select(-1, 2) / 2, half_h = xywh.select(-1, 3) / 2;
  out.select(-1, 0).copy_(x - half_w);
  out.select(-1, 1).copy_(y - half_h);
  out.select(-1, 2).copy_(x + half_w);
  out.select(-1, 3).copy_(y + half_h);
  return out;
}

torch::Tensor xyxy2xywh(const torch::Tensor& xyxy) {
  auto out = torch::empty_like(xyxy);
  const auto x1 = xyxy.select(-1, 0), y1 = xyxy.select(-1, 1);
  const auto x2 = xyxy.select(-1, 2), y2 = xyxy.select(-1, 3);
  out.select(-1, 0).copy_((x1 + x2) / 2);
  out.select(-1, 1).copy_((y1 + y2) / 2);
  out.select(-1, 2).copy_(x2 - x1);
  out.select(-1, 3).copy_(y2 - y1);
  return out;
}

torch::Tensor box_iou(const torch::Tensor& box1, const torch::Tensor& box2) {
  const auto a = box1.unsqueeze(1);  // [N,1,4]
  const auto b = box2.unsqueeze(0);  // [1,M,4]
  const auto a1 = a.narrow(2, 0, 2), a2 = a.narrow(2, 2, 2);
  const auto b1 = b.narrow(2, 0, 2), b2 = b.narrow(2, 2, 2);
  const auto inter = (torch::min(a2, b2) - torch::max(a1, b1)).clamp_min(0).prod(2);
  return inter / ((a2 - a1).prod(2) + (b2 - b1).prod(2) - inter + 1e-7);
}

void clip_boxes(torch::Tensor& boxes, int height, int width) {
  boxes.select(1, 0).clamp_(0, width);
  boxes.select(1, 1).clamp_(0, height);
  boxes.select(1, 2).clamp_(0, width);
  boxes.select(1, 3).clamp_(0, height);
}

namespace {

// Undo padding, then scaling. The double gains/pads become float32 scalars, as in PyTorch.
void unletterbox(torch::Tensor& boxes, double gain_w, double gain_h, double pad_w, double pad_h, int orig_h,
                 int orig_w) {
  for (int64_t c : {0, 2}) boxes.select(1, c).sub_(pad_w).div_(gain_w);
  for (int64_t c : {1, 3}) boxes.select(1, c).sub_(pad_h).div_(gain_h);
  clip_boxes(boxes, orig_h, orig_w);
}

}  // namespace

void scale_boxes(torch::Tensor& boxes, const LetterboxInfo& letterbox) {
  const double gain_w = letterbox.gain_per_axis ? letterbox.ratio_w : letterbox.ratio_h;
  unletterbox(boxes, gain_w, letterbox.ratio_h, letterbox.pad_w, letterbox.pad_h, letterbox.orig_h, letterbox.orig_w);
}

void scale_boxes(torch::Tensor& boxes, int letterboxed_h, int letterboxed_w, int orig_h, int orig_w, bool ultralytics) {
  const double gain = std::min(static_cast<double>(letterboxed_h) / orig_h,
                               static_cast<double>(letterboxed_w) / orig_w);
  if (!ultralytics) {
    const double pad_w = (letterboxed_w - orig_w * gain) / 2;
    const double pad_h = (letterboxed_h - orig_h * gain) / 2;
    unletterbox(boxes, gain, gain, pad_w, pad_h, orig_h, orig_w);
    return;
  }
  // As its LetterBox resized: each side rounded (half to even, as Python), the image at whole pixels.
  const double new_w = std::max(std::nearbyint(orig_w * gain), 1.0), new_h = std::max(std::nearbyint(orig_h * gain), 1.0);
  unletterbox(boxes, new_w / orig_w, new_h / orig_h, std::nearbyint((letterboxed_w - new_w) / 2 - 0.1),
              std::nearbyint((letterboxed_h - new_h) / 2 - 0.1), orig_h, orig_w);
}

}  // namespace kestrel
