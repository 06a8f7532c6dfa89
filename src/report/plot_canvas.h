// Drawing pieces every picture in a run folder shares: text, YOLOv5's class colour palette, a plot
// frame (title, grid, tick values, axis labels) that maps data to pixels, and image files written
// with an error that names the path. OpenCV only, so plots never pull in LibTorch.
#pragma once
#include <opencv2/core.hpp>

#include <functional>
#include <string>

namespace kestrel {

// A data range that grows with add(); settle() gives an empty or flat range some width.
struct AxisRange {
  double lo = 1e300, hi = -1e300;
  void add(double v);
  void settle();
};

// The data area of a plot (pixels) and the ranges it shows.
struct PlotFrame {
  cv::Rect area;
  AxisRange x, y;
  int px(double v) const { return area.x + static_cast<int>((v - x.lo) / (x.hi - x.lo) * area.width); }
  int py(double v) const { return area.y + area.height - static_cast<int>((v - y.lo) / (y.hi - y.lo) * area.height); }
};

struct FrameLabels {
  std::string title, x_label, y_label;  // labels carry their units
  std::function<std::string(double)> x_tick;  // tick text of an x value (default: %.3g)
};

void draw_text(cv::Mat& img, const std::string& s, cv::Point at, double scale = 0.45,
               cv::Scalar colour = {0, 0, 0});
// Title above, grid and five tick values per axis, the frame, and the axis labels.
void draw_frame(cv::Mat& img, const PlotFrame& frame, const FrameLabels& labels);
std::string tick_text(double v);  // %.3g

// The colour of class `cls` in YOLOv5's 20-colour palette (BGR), as its boxes and plots use.
cv::Scalar class_colour(int cls);

// Writes a PNG or JPEG (by extension); throws std::runtime_error naming the path when it cannot.
void write_image(const cv::Mat& img, const std::string& path);

}  // namespace kestrel
