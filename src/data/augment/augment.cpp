// Label conversions, flips and mixup (utils/general.py, utils/augmentations.py of YOLOv5 v7.0).
#include "data/augment/augment.h"

#include <algorithm>
#include <cmath>

namespace kestrel {
namespace {

double standard_normal(SampleRng& rng) {  // Box-Muller; the second variate is dropped to stay stateless
  const double u1 = 1.0 - rng.random(), u2 = rng.random();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

// Marsaglia-Tsang for shape >= 1.
double standard_gamma(SampleRng& rng, double shape) {
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = standard_normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = rng.random();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

}  // namespace

void xywhn_to_xyxy(const std::vector<Label>& in, float w, float h, float padw, float padh,
                   std::vector<BoxLabel>& out) {
  for (const Label& l : in)
    out.push_back({l.cls, w * (l.x - l.w / 2) + padw, h * (l.y - l.h / 2) + padh, w * (l.x + l.w / 2) + padw,
                   h * (l.y + l.h / 2) + padh});
}

void xyxy_to_xywhn(std::vector<BoxLabel>& boxes, int w, int h, std::vector<Label>& out) {
  const float max_x = static_cast<float>(w - 1e-3), max_y = static_cast<float>(h - 1e-3);
  const float fw = static_cast<float>(w), fh = static_cast<float>(h);
  out.resize(boxes.size());
  for (size_t i = 0; i < boxes.size(); ++i) {
    BoxLabel& b = boxes[i];
    b.x1 = std::min(std::max(b.x1, 0.f), max_x);
    b.x2 = std::min(std::max(b.x2, 0.f), max_x);
    b.y1 = std::min(std::max(b.y1, 0.f), max_y);
    b.y2 = std::min(std::max(b.y2, 0.f), max_y);
    out[i] = {b.cls, (b.x1 + b.x2) / 2 / fw, (b.y1 + b.y2) / 2 / fh, (b.x2 - b.x1) / fw, (b.y2 - b.y1) / fh};
  }
}

void xyxy_to_xywhn_flipped(const std::vector<BoxLabel>& boxes, int w, int h, bool flip_lr, bool flip_ud,
                           std::vector<Label>& out) {
  const float fw = static_cast<float>(w), fh = static_cast<float>(h);
  out.resize(boxes.size());
  for (size_t i = 0; i < boxes.size(); ++i) {
    const BoxLabel& b = boxes[i];
    float x = (b.x1 + b.x2) / 2, y = (b.y1 + b.y2) / 2;
    if (flip_ud) y = fh - y;
    if (flip_lr) x = fw - x;
    out[i] = {b.cls, x / fw, y / fh, (b.x2 - b.x1) / fw, (b.y2 - b.y1) / fh};
  }
}

void flip_labels_ud(std::vector<Label>& labels) {
  for (Label& l : labels) l.y = 1 - l.y;
}

void flip_labels_lr(std::vector<Label>& labels) {
  for (Label& l : labels) l.x = 1 - l.x;
}

double draw_mixup_ratio(SampleRng& rng) {
  const double a = standard_gamma(rng, 32.0), b = standard_gamma(rng, 32.0);
  return a / (a + b);
}

void mixup_images(cv::Mat& img, const cv::Mat& img2, double r) {
  CV_Assert(img.size() == img2.size() && img.type() == CV_8UC3 && img2.type() == CV_8UC3);
  const double r2 = 1 - r;
  for (int y = 0; y < img.rows; ++y) {
    uint8_t* a = img.ptr<uint8_t>(y);
    const uint8_t* b = img2.ptr<uint8_t>(y);
    for (int x = 0; x < img.cols * 3; ++x) a[x] = static_cast<uint8_t>(a[x] * r + b[x] * r2);
  }
}

}  // namespace kestrel
