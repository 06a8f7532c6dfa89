// Shared plot drawing (see plot_canvas.h).
#include "report/plot_canvas.h"

#include <algorithm>
#include <cstdio>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <stdexcept>
#include <vector>

namespace kestrel {

void AxisRange::add(double v) { lo = std::min(lo, v), hi = std::max(hi, v); }

void AxisRange::settle() {
  if (!(lo <= hi)) lo = 0, hi = 1;
  if (hi - lo < 1e-12) lo -= 0.5, hi += 0.5;
}

void draw_text(cv::Mat& img, const std::string& s, cv::Point at, double scale, cv::Scalar colour) {
  cv::putText(img, s, at, cv::FONT_HERSHEY_SIMPLEX, scale, colour, 1, cv::LINE_AA);
}

std::string tick_text(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.3g", v);
  return s;
}

namespace {

// Tick values with as many significant digits (3 to 6) as it takes to tell neighbours apart.
std::vector<std::string> y_ticks(const AxisRange& r) {
  std::vector<std::string> out;
  for (int digits = 3; digits <= 6; ++digits) {
    out.clear();
    for (int t = 0; t <= 4; ++t) {
      char s[32];
      std::snprintf(s, sizeof s, "%.*g", digits, r.lo + (r.hi - r.lo) * t / 4);
      out.emplace_back(s);
    }
    if (std::adjacent_find(out.begin(), out.end()) == out.end()) break;
  }
  return out;
}

}  // namespace

void draw_frame(cv::Mat& img, const PlotFrame& f, const FrameLabels& l) {
  const cv::Rect& a = f.area;
  draw_text(img, l.title, {a.x, std::max(18, a.y - 32)}, 0.6);
  const std::vector<std::string> yt = y_ticks(f.y);
  for (int t = 0; t <= 4; ++t) {
    const double xv = f.x.lo + (f.x.hi - f.x.lo) * t / 4;
    const int gx = a.x + a.width * t / 4, gy = a.y + a.height - a.height * t / 4;
    cv::line(img, {gx, a.y}, {gx, a.y + a.height}, {230, 230, 230}, 1);
    cv::line(img, {a.x, gy}, {a.x + a.width, gy}, {230, 230, 230}, 1);
    draw_text(img, l.x_tick ? l.x_tick(xv) : tick_text(xv), {gx - 14, a.y + a.height + 18}, 0.4);
    draw_text(img, yt[t], {std::max(2, a.x - 72), gy + 4}, 0.4);
  }
  cv::rectangle(img, a, {0, 0, 0}, 1);
  draw_text(img, l.x_label, {a.x + a.width / 2 - 4 * static_cast<int>(l.x_label.size()), a.y + a.height + 44});
  draw_text(img, l.y_label, {std::max(2, a.x - 72), a.y - 10});
}

cv::Scalar class_colour(int cls) {
  static const unsigned kPalette[] = {0xFF3838, 0xFF9D97, 0xFF701F, 0xFFB21D, 0xCFD231, 0x48F90A, 0x92CC17,
                                      0x3DDB86, 0x1A9334, 0x00D4BB, 0x2C99A8, 0x00C2FF, 0x344593, 0x6473FF,
                                      0x0018EC, 0x8438FF, 0x520085, 0xCB38FF, 0xFF95C8, 0xFF37C7};
  const unsigned rgb = kPalette[static_cast<unsigned>(std::max(cls, 0)) % std::size(kPalette)];
  return {static_cast<double>(rgb & 0xFF), static_cast<double>((rgb >> 8) & 0xFF), static_cast<double>(rgb >> 16)};
}

void write_image(const cv::Mat& img, const std::string& path) {
  bool ok = false;
  try {
    ok = cv::imwrite(path, img);
  } catch (const cv::Exception&) {  // e.g. a folder that does not exist
  }
  if (!ok) throw std::runtime_error(path + ": cannot write the image");
}

}  // namespace kestrel
