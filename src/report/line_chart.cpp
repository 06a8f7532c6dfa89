// Line charts with OpenCV (see line_chart.h).
#include "report/line_chart.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

#include "report/plot_canvas.h"

namespace kestrel {

namespace {

const cv::Scalar kColours[] = {{200, 110, 30}, {40, 120, 230}, {60, 160, 60}, {50, 50, 200}, {160, 80, 160}, {30, 160, 180}};
constexpr int kLeft = 80, kRight = 20, kTop = 56, kBottom = 60, kLegendColumn = 230;

// Dashes of 5 px with 4 px gaps along the whole polyline, whatever the spacing of its points.
void draw_dotted(cv::Mat& img, const std::vector<cv::Point>& line, cv::Scalar colour, int thickness) {
  constexpr double kOn = 5, kPeriod = 9;
  double walked = 0;
  for (size_t i = 0; i + 1 < line.size(); ++i) {
    const cv::Point2d a = line[i], d = cv::Point2d(line[i + 1]) - a;
    const double len = std::hypot(d.x, d.y);
    for (double t = 0; t < len;) {
      const double phase = std::fmod(walked + t, kPeriod);
      const double step = std::min(len - t, phase < kOn ? kOn - phase : kPeriod - phase);
      if (phase < kOn) cv::line(img, a + d * (t / len), a + d * ((t + step) / len), colour, thickness, cv::LINE_AA);
      t += step;
    }
    walked += len;
  }
}

}  // namespace

cv::Mat render_line_chart(const LineChart& c) {
  const int legend = c.legend_outside ? kLegendColumn : 0;
  cv::Mat img(c.height, c.width + legend, CV_8UC3, cv::Scalar(255, 255, 255));
  auto fx = [&](double x) { return c.log_x ? std::log10(x) : x; };
  auto usable = [&](double x, double y) { return (!c.log_x || x > 0) && std::isfinite(x) && std::isfinite(y); };
  PlotFrame f;
  f.area = cv::Rect(kLeft, kTop, c.width - kLeft - kRight, c.height - kTop - kBottom);
  for (const ChartSeries& s : c.series)
    for (const auto& [x, y] : s.points)
      if (usable(x, y)) f.x.add(fx(x)), f.y.add(y);
  if (c.x_range) f.x = {fx(c.x_range->first), fx(c.x_range->second)};
  if (c.y_range) f.y = {c.y_range->first, c.y_range->second};
  f.x.settle(), f.y.settle();

  FrameLabels labels{c.title, c.x_label, c.y_label, nullptr};
  if (c.log_x) labels.x_tick = [](double v) { return tick_text(std::pow(10.0, v)); };
  draw_frame(img, f, labels);
  const cv::Rect clip(f.area.x - 2, f.area.y - 2, f.area.width + 5, f.area.height + 5);
  cv::Mat plot = img(clip);  // lines outside a fixed range are cut at the frame
  const int legend_x = c.legend_outside ? c.width : f.area.x + f.area.width - 190;
  int legend_y = f.area.y + 18;
  for (size_t i = 0; i < c.series.size(); ++i) {
    const ChartSeries& s = c.series[i];
    const cv::Scalar colour = s.colour.value_or(kColours[i % std::size(kColours)]);
    std::vector<cv::Point> line;
    for (const auto& [x, y] : s.points)
      if (usable(x, y)) line.emplace_back(f.px(fx(x)) - clip.x, f.py(y) - clip.y);
    if (s.dotted) draw_dotted(plot, line, colour, s.thickness);
    else if (line.size() > 1) cv::polylines(plot, line, false, colour, s.thickness, cv::LINE_AA);
    if (s.markers)
      for (const cv::Point& p : line) cv::circle(plot, p, 2, colour, cv::FILLED, cv::LINE_AA);
    if (s.name.empty()) continue;
    cv::line(img, {legend_x, legend_y - 4}, {legend_x + 25, legend_y - 4}, colour, std::max(2, s.thickness), cv::LINE_AA);
    draw_text(img, s.name, {legend_x + 30, legend_y}, 0.42);
    legend_y += 18;
  }
  return img;
}

void write_line_chart(const LineChart& chart, const std::string& path) { write_image(render_line_chart(chart), path); }

void write_line_charts(const std::vector<LineChart>& charts, const std::string& path, int columns) {
  if (charts.empty()) return;
  const size_t per_row = columns > 0 ? static_cast<size_t>(columns) : charts.size();
  std::vector<cv::Mat> rows;
  for (size_t start = 0; start < charts.size(); start += per_row) {
    std::vector<cv::Mat> panels;
    for (size_t i = start; i < start + per_row; ++i)
      panels.push_back(i < charts.size() ? render_line_chart(charts[i])
                                         : cv::Mat(panels.front().size(), CV_8UC3, cv::Scalar(255, 255, 255)));
    cv::Mat row;
    cv::hconcat(panels, row);
    rows.push_back(row);
  }
  cv::Mat grid;
  cv::vconcat(rows, grid);
  write_image(grid, path);
}

}  // namespace kestrel
