// Line charts with OpenCV (see line_chart.h).
#include "report/line_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <stdexcept>

namespace kestrel {

namespace {

const cv::Scalar kColours[] = {{200, 110, 30}, {40, 120, 230}, {60, 160, 60}, {50, 50, 200}, {160, 80, 160}, {30, 160, 180}};
constexpr int kLeft = 80, kRight = 20, kTop = 56, kBottom = 60;

struct Range {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  void add(double v) { lo = std::min(lo, v), hi = std::max(hi, v); }
  void settle() {
    if (!(lo <= hi)) lo = 0, hi = 1;
    if (hi - lo < 1e-12) lo -= 0.5, hi += 0.5;
  }
};

void text(cv::Mat& img, const std::string& s, cv::Point at, double scale = 0.45, cv::Scalar colour = {0, 0, 0}) {
  cv::putText(img, s, at, cv::FONT_HERSHEY_SIMPLEX, scale, colour, 1, cv::LINE_AA);
}

std::string tick_label(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.3g", v);
  return s;
}

cv::Mat render(const LineChart& c) {
  cv::Mat img(c.height, c.width, CV_8UC3, cv::Scalar(255, 255, 255));
  auto fx = [&](double x) { return c.log_x ? std::log10(x) : x; };
  Range xr, yr;
  for (const ChartSeries& s : c.series)
    for (const auto& [x, y] : s.points)
      if ((!c.log_x || x > 0) && std::isfinite(x) && std::isfinite(y)) xr.add(fx(x)), yr.add(y);
  xr.settle(), yr.settle();
  const int x0 = kLeft, x1 = c.width - kRight, y0 = kTop, y1 = c.height - kBottom;
  auto px = [&](double x) { return x0 + static_cast<int>((fx(x) - xr.lo) / (xr.hi - xr.lo) * (x1 - x0)); };
  auto py = [&](double y) { return y1 - static_cast<int>((y - yr.lo) / (yr.hi - yr.lo) * (y1 - y0)); };

  text(img, c.title, {x0, 24}, 0.6);
  for (int t = 0; t <= 4; ++t) {  // ticks and grid lines
    const double xv = xr.lo + (xr.hi - xr.lo) * t / 4, yv = yr.lo + (yr.hi - yr.lo) * t / 4;
    const int gx = x0 + (x1 - x0) * t / 4, gy = y1 - (y1 - y0) * t / 4;
    cv::line(img, {gx, y0}, {gx, y1}, {230, 230, 230}, 1);
    cv::line(img, {x0, gy}, {x1, gy}, {230, 230, 230}, 1);
    text(img, tick_label(c.log_x ? std::pow(10.0, xv) : xv), {gx - 14, y1 + 18}, 0.4);
    text(img, tick_label(yv), {8, gy + 4}, 0.4);
  }
  cv::rectangle(img, {x0, y0}, {x1, y1}, {0, 0, 0}, 1);
  text(img, c.x_label, {(x0 + x1) / 2 - 4 * static_cast<int>(c.x_label.size()), c.height - 14});
  text(img, c.y_label, {8, y0 - 10});
  int legend_y = y0 + 18;
  for (size_t i = 0; i < c.series.size(); ++i) {
    const ChartSeries& s = c.series[i];
    const cv::Scalar colour = kColours[i % std::size(kColours)];
    std::vector<cv::Point> line;
    for (const auto& [x, y] : s.points)
      if ((!c.log_x || x > 0) && std::isfinite(x) && std::isfinite(y)) line.emplace_back(px(x), py(y));
    if (line.size() > 1) cv::polylines(img, line, false, colour, 2, cv::LINE_AA);
    for (const cv::Point& p : line) cv::circle(img, p, 2, colour, cv::FILLED, cv::LINE_AA);
    cv::line(img, {x1 - 190, legend_y - 4}, {x1 - 165, legend_y - 4}, colour, 2, cv::LINE_AA);
    text(img, s.name, {x1 - 160, legend_y}, 0.42);
    legend_y += 18;
  }
  return img;
}

void write_png(const cv::Mat& img, const std::string& path) {
  bool ok = false;
  try {
    ok = cv::imwrite(path, img);
  } catch (const cv::Exception&) {  // e.g. a folder that does not exist
  }
  if (!ok) throw std::runtime_error(path + ": cannot write the chart");
}

}  // namespace

void write_line_chart(const LineChart& chart, const std::string& path) { write_png(render(chart), path); }

void write_line_charts(const std::vector<LineChart>& charts, const std::string& path) {
  std::vector<cv::Mat> panels;
  for (const LineChart& c : charts) panels.push_back(render(c));
  cv::Mat row;
  cv::hconcat(panels, row);
  write_png(row, path);
}

}  // namespace kestrel
