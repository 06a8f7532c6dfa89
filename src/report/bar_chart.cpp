// Horizontal bars on an OpenCV canvas: labels left of the axis, values right of each bar.
#include "report/bar_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <opencv2/imgproc.hpp>

#include "report/plot_canvas.h"

namespace kestrel {

namespace {
constexpr int kWidth = 1200, kLabelWidth = 420, kRight = 150, kTop = 60, kRow = 40, kBottom = 120;
const cv::Scalar kGroupColours[] = {{60, 160, 60}, {170, 170, 170}, {40, 140, 240}, {200, 120, 40}};  // BGR

// A round tick step (1, 2 or 5 times a power of ten) giving about five ticks up to `top`.
double tick_step(double top) {
  const double raw = top / 5, power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (raw <= m * power) return m * power;
  return 10 * power;
}

std::string value_text(double v, const std::string& unit) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3g %s", v, unit.c_str());
  return buf;
}
}  // namespace

cv::Mat draw_bar_chart(const BarChart& chart) {
  const int rows = static_cast<int>(chart.bars.size());
  const int height = kTop + std::max(rows, 1) * kRow + kBottom;
  cv::Mat img(height, kWidth, CV_8UC3, cv::Scalar(255, 255, 255));
  double top = 0;
  for (const Bar& b : chart.bars) top = std::max(top, b.value);
  if (top <= 0) top = 1;
  const double step = tick_step(top);
  top = std::ceil(top / step) * step;
  const int x0 = kLabelWidth, x1 = kWidth - kRight, y_axis = kTop + rows * kRow;
  const auto px = [&](double v) { return x0 + static_cast<int>(v / top * (x1 - x0)); };

  draw_text(img, chart.title, {20, 30}, 0.7);
  for (double v = 0; v <= top + step / 2; v += step) {  // value ticks and grid
    cv::line(img, {px(v), kTop - 5}, {px(v), y_axis}, {230, 230, 230}, 1);
    cv::line(img, {px(v), y_axis}, {px(v), y_axis + 5}, {0, 0, 0}, 1);
    draw_text(img, tick_text(v), {px(v) - 12, y_axis + 22});
  }
  cv::line(img, {x0, kTop - 5}, {x0, y_axis}, {0, 0, 0}, 1);
  cv::line(img, {x0, y_axis}, {x1, y_axis}, {0, 0, 0}, 1);
  draw_text(img, chart.value_label, {x0 + (x1 - x0) / 2 - 120, y_axis + 52}, 0.55);

  for (int i = 0; i < rows; ++i) {
    const Bar& b = chart.bars[i];
    const int y = kTop + i * kRow;
    const cv::Scalar colour = kGroupColours[std::clamp(b.group, 0, 3)];
    cv::rectangle(img, {x0, y + 6}, {std::max(px(b.value), x0 + 1), y + kRow - 6}, colour, cv::FILLED);
    draw_text(img, b.label.substr(0, 48), {10, y + kRow / 2 + 5});
    draw_text(img, value_text(b.value, chart.value_unit), {px(b.value) + 8, y + kRow / 2 + 5});
  }
  for (size_t g = 0; g < chart.groups.size() && g < 4; ++g) {  // legend, two entries a line, below the axis
    const int x = 20 + static_cast<int>(g % 2) * 560, y = y_axis + 72 + static_cast<int>(g / 2) * 22;
    cv::rectangle(img, {x, y}, {x + 16, y + 14}, kGroupColours[g], cv::FILLED);
    draw_text(img, chart.groups[g], {x + 24, y + 12});
  }
  return img;
}

void write_bar_chart(const BarChart& chart, const std::string& path) { write_image(draw_bar_chart(chart), path); }

}  // namespace kestrel
