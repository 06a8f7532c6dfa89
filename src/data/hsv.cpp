// augment_hsv: gains, lookup tables and the two ways of applying them (whole image / cache-sized strips).
#include "data/hsv.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

namespace kestrel {
namespace {

void apply_luts(cv::Mat& hsv, const HsvLuts& luts) {
  for (int y = 0; y < hsv.rows; ++y) {
    uint8_t* p = hsv.ptr<uint8_t>(y);
    for (int x = 0; x < hsv.cols; ++x, p += 3) {
      p[0] = luts.hue[p[0]];
      p[1] = luts.sat[p[1]];
      p[2] = luts.val[p[2]];
    }
  }
}

}  // namespace

HsvGains hsv_gains_from_u(const double u[3], double hgain, double sgain, double vgain) {
  HsvGains g;
  g.active = hgain != 0 || sgain != 0 || vgain != 0;
  const double gain[3] = {hgain, sgain, vgain};
  for (int i = 0; i < 3; ++i) g.r[i] = u[i] * gain[i] + 1;
  return g;
}

HsvGains draw_hsv_gains(SampleRng& rng, const Hyp& hyp) {
  if (hyp.hsv_h == 0 && hyp.hsv_s == 0 && hyp.hsv_v == 0) return {};
  double u[3];
  for (double& v : u) v = rng.uniform(-1, 1);
  return hsv_gains_from_u(u, hyp.hsv_h, hyp.hsv_s, hyp.hsv_v);
}

HsvLuts hsv_luts(const double r[3]) {
  HsvLuts t;
  for (int x = 0; x < 256; ++x) {
    t.hue[x] = static_cast<uint8_t>(std::fmod(x * r[0], 180.0));  // x*r0 >= 0: fmod is Python's %
    t.sat[x] = static_cast<uint8_t>(std::clamp(x * r[1], 0.0, 255.0));
    t.val[x] = static_cast<uint8_t>(std::clamp(x * r[2], 0.0, 255.0));
  }
  return t;
}

void augment_hsv(cv::Mat& bgr, const HsvGains& gains) {
  if (!gains.active) return;
  const HsvLuts luts = hsv_luts(gains.r);
  cv::Mat hsv;
  cv::cvtColor(bgr, hsv, cv::COLOR_BGR2HSV);
  apply_luts(hsv, luts);
  cv::cvtColor(hsv, bgr, cv::COLOR_HSV2BGR);
}

void augment_hsv_strips(cv::Mat& bgr, const HsvGains& gains) {
  if (!gains.active) return;
  const HsvLuts luts = hsv_luts(gains.r);
  constexpr int kStripRows = 8;
  thread_local cv::Mat strip_buffer;
  strip_buffer.create(kStripRows, bgr.cols, CV_8UC3);
  for (int y0 = 0; y0 < bgr.rows; y0 += kStripRows) {
    cv::Mat rows = bgr.rowRange(y0, std::min(y0 + kStripRows, bgr.rows));
    cv::Mat strip = strip_buffer.rowRange(0, rows.rows);  // a view of the right size: never reallocated
    cv::cvtColor(rows, strip, cv::COLOR_BGR2HSV);
    apply_luts(strip, luts);
    cv::cvtColor(strip, rows, cv::COLOR_HSV2BGR);
  }
}

}  // namespace kestrel
