// random_perspective and its box transform, following YOLOv5 v7.0 utils/augmentations.py (float64)
// and Ultralytics' RandomPerspective (float32).
#include "data/augment/perspective.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

namespace kestrel {
namespace {

// a . b over three terms, as numpy's `@` sums them: in double left to right (the products rounded;
// YOLOv5's float64 matrices gave the same bits), in float32 as OpenBLAS's FMA kernels chain them
// (the first product rounded, then a fused multiply-add per term), which Ultralytics' float32
// matrices and box corners follow to the bit.
inline double dot3(double a0, double b0, double a1, double b1, double a2, double b2) { return a0 * b0 + a1 * b1 + a2 * b2; }
inline float dot3(float a0, float b0, float a1, float b1, float a2, float b2) {
  return std::fmaf(a2, b2, std::fmaf(a1, b1, a0 * b0));
}

// 3x3 product in T, the result held in double.
template <class T>
cv::Matx33d matmul(const cv::Matx33d& a, const cv::Matx33d& b) {
  cv::Matx33d c;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) c(i, j) = dot3(T(a(i, 0)), T(b(0, j)), T(a(i, 1)), T(b(1, j)), T(a(i, 2)), T(b(2, j)));
  return c;
}

cv::Matx33d to_float32(cv::Matx33d m) {
  for (double& v : m.val) v = static_cast<float>(v);
  return m;
}

// One box's transformed corners, min/max and clip in T; false when box_candidates drops it.
template <class T>
bool transform_box(const BoxLabel& b, const cv::Matx33d& M, bool perspective, float scale, int out_w, int out_h,
                   double box2_out[4]) {
  const T cx[4] = {b.x1, b.x2, b.x1, b.x2}, cy[4] = {b.y1, b.y2, b.y2, b.y1};
  T lo_x = 0, lo_y = 0, hi_x = 0, hi_y = 0;
  for (int k = 0; k < 4; ++k) {
    T x = dot3(cx[k], T(M(0, 0)), cy[k], T(M(0, 1)), T(1), T(M(0, 2)));
    T y = dot3(cx[k], T(M(1, 0)), cy[k], T(M(1, 1)), T(1), T(M(1, 2)));
    if (perspective) {
      const T w = dot3(cx[k], T(M(2, 0)), cy[k], T(M(2, 1)), T(1), T(M(2, 2)));
      x /= w;
      y /= w;
    }
    if (k == 0 || x < lo_x) lo_x = x;
    if (k == 0 || y < lo_y) lo_y = y;
    if (k == 0 || x > hi_x) hi_x = x;
    if (k == 0 || y > hi_y) hi_y = y;
  }
  const T w = T(out_w), h = T(out_h), zero = 0;
  const T box2[4] = {std::min(std::max(lo_x, zero), w), std::min(std::max(lo_y, zero), h), std::min(std::max(hi_x, zero), w),
                     std::min(std::max(hi_y, zero), h)};
  std::copy(box2, box2 + 4, box2_out);
  const float box1[4] = {b.x1 * scale, b.y1 * scale, b.x2 * scale, b.y2 * scale};  // float32 labels times the scale
  return box_candidate(box1, box2);
}

}  // namespace

PerspectiveDraws draw_perspective(SampleRng& rng, const PerspectiveParams& p) {
  PerspectiveDraws d;
  d.p20 = rng.uniform(-p.perspective, p.perspective);
  d.p21 = rng.uniform(-p.perspective, p.perspective);
  d.angle = rng.uniform(-p.degrees, p.degrees);
  d.scale = rng.uniform(1 - p.scale, 1 + p.scale);
  d.shear_x = rng.uniform(-p.shear, p.shear);
  d.shear_y = rng.uniform(-p.shear, p.shear);
  d.tx = rng.uniform(0.5 - p.translate, 0.5 + p.translate);
  d.ty = rng.uniform(0.5 - p.translate, 0.5 + p.translate);
  return d;
}

PerspectiveMatrices perspective_matrices(const PerspectiveDraws& d, int in_w, int in_h, int out_w, int out_h, bool float32) {
  PerspectiveMatrices m;
  m.C = cv::Matx33d::eye();
  m.C(0, 2) = -in_w / 2.0;
  m.C(1, 2) = -in_h / 2.0;
  m.P = cv::Matx33d::eye();
  m.P(2, 0) = d.p20;
  m.P(2, 1) = d.p21;
  // OpenCV's own rotation matrix: it forms the angle as a * (pi/180), which differs in the last bit from
  // (a*pi)/180 for some angles.
  const cv::Mat rot = cv::getRotationMatrix2D(cv::Point2f(0, 0), d.angle, d.scale);
  m.R = cv::Matx33d::eye();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) m.R(i, j) = rot.at<double>(i, j);
  m.S = cv::Matx33d::eye();
  m.S(0, 1) = std::tan(d.shear_x * M_PI / 180);
  m.S(1, 0) = std::tan(d.shear_y * M_PI / 180);
  m.T = cv::Matx33d::eye();
  m.T(0, 2) = d.tx * out_w;
  m.T(1, 2) = d.ty * out_h;
  if (float32) {
    for (cv::Matx33d* f : {&m.C, &m.P, &m.R, &m.S, &m.T}) *f = to_float32(*f);
    m.M = matmul<float>(matmul<float>(matmul<float>(matmul<float>(m.T, m.S), m.R), m.P), m.C);
  } else {
    m.M = matmul<double>(matmul<double>(matmul<double>(matmul<double>(m.T, m.S), m.R), m.P), m.C);
  }
  return m;
}

void transform_labels(std::vector<BoxLabel>& labels, const cv::Matx33d& M, const PerspectiveParams& p, double scale,
                      int out_w, int out_h, PerspectiveTrace* trace) {
  if (trace) {
    trace->boxes.clear();
    trace->kept.clear();
  }
  const float s32 = static_cast<float>(scale);  // numpy multiplies the float32 labels in float32
  const bool perspective = p.perspective != 0;
  size_t n_kept = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const BoxLabel& b = labels[i];
    double box2[4];
    const bool keep = p.float32 ? transform_box<float>(b, M, perspective, s32, out_w, out_h, box2)
                                : transform_box<double>(b, M, perspective, s32, out_w, out_h, box2);
    if (trace) trace->boxes.insert(trace->boxes.end(), box2, box2 + 4);
    if (!keep) continue;
    if (trace) trace->kept.push_back(static_cast<int>(i));
    labels[n_kept++] = {b.cls, float(box2[0]), float(box2[1]), float(box2[2]), float(box2[3])};
  }
  labels.resize(n_kept);
}

void random_perspective(const cv::Mat& img, std::vector<BoxLabel>& labels, const PerspectiveParams& p,
                        const PerspectiveDraws& d, int out_w, int out_h, cv::Mat& out, PerspectiveTrace* trace) {
  const PerspectiveMatrices m = perspective_matrices(d, img.cols, img.rows, out_w, out_h, p.float32);
  if (trace) trace->matrices = m;
  const cv::Scalar grey(114, 114, 114);
  if (out_h != img.rows || out_w != img.cols || m.M != cv::Matx33d::eye()) {
    if (p.perspective != 0)
      cv::warpPerspective(img, out, cv::Mat(m.M), cv::Size(out_w, out_h), cv::INTER_LINEAR, cv::BORDER_CONSTANT, grey);
    else
      cv::warpAffine(img, out, cv::Mat(m.M).rowRange(0, 2), cv::Size(out_w, out_h), cv::INTER_LINEAR,
                     cv::BORDER_CONSTANT, grey);
  } else if (out.data != img.data) {
    img.copyTo(out);
  }
  transform_labels(labels, m.M, p, d.scale, out_w, out_h, trace);
}

}  // namespace kestrel
