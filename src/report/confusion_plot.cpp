// The confusion matrix heatmap (see confusion_plot.h).
#include "report/confusion_plot.h"

#include <algorithm>
#include <cstdio>
#include <opencv2/imgproc.hpp>

#include "report/plot_canvas.h"

namespace kestrel {

namespace {
cv::Scalar blue(double t) { return {255 - 148 * t, 250 - 202 * t, 247 - 239 * t}; }  // white -> dark blue (BGR)
}  // namespace

void write_confusion_plot(const std::vector<double>& matrix, int nc, const std::vector<std::string>& names,
                          const std::string& path) {
  const int n = nc + 1, side = std::clamp(720 / n, 6, 60), left = 150, top = 80;
  const bool labelled = nc < 30;
  cv::Mat img(top + n * side + 110, std::max(640, left + n * side + 110), CV_8UC3, cv::Scalar::all(255));
  std::vector<double> column_sum(n, 0.0);
  for (int p = 0; p < n; ++p)
    for (int t = 0; t < n; ++t) column_sum[t] += matrix[p * n + t];
  auto name = [&](int i) { return i == nc ? std::string("background") : i < static_cast<int>(names.size()) ? names[i] : std::to_string(i); };
  for (int p = 0; p < n; ++p)
    for (int t = 0; t < n; ++t) {
      const double v = matrix[p * n + t] / (column_sum[t] + 1e-9);
      const cv::Rect cell(left + t * side, top + p * side, side, side);
      if (v < 0.005) continue;  // as YOLOv5: near-zero cells stay blank
      cv::rectangle(img, cell, blue(std::min(v, 1.0)), cv::FILLED);
      if (!labelled || side < 28) continue;
      char s[16];
      std::snprintf(s, sizeof s, "%.2f", v);
      draw_text(img, s, {cell.x + side / 2 - 14, cell.y + side / 2 + 4}, 0.38, v > 0.5 ? cv::Scalar::all(255) : cv::Scalar::all(0));
    }
  cv::rectangle(img, {left, top, n * side, n * side}, {0, 0, 0}, 1);
  if (labelled)
    for (int i = 0; i < n; ++i) {
      const std::string s = name(i).substr(0, 18);
      draw_text(img, s, {left - 8 - 7 * static_cast<int>(s.size()), top + i * side + side / 2 + 4}, 0.38);
      // true-class names under the columns, staggered so neighbours do not overlap
      draw_text(img, s.substr(0, std::max(4, side / 6)), {left + i * side + 2, top + n * side + 16 + 14 * (i % 2)}, 0.35);
    }
  draw_text(img, "Confusion Matrix", {left, 26}, 0.6);
  draw_text(img, "each column (a true class) sums to 1; blank: under 0.005", {left, 46}, 0.4, {90, 90, 90});
  draw_text(img, "True", {left + n * side / 2 - 16, top + n * side + 60}, 0.5);
  draw_text(img, "Predicted", {10, top - 12}, 0.5);
  const int bx = left + n * side + 30;  // colour bar
  for (int y = 0; y < n * side; ++y) cv::line(img, {bx, top + y}, {bx + 16, top + y}, blue(1.0 - double(y) / (n * side)));
  draw_text(img, "1.0", {bx + 20, top + 8}, 0.38);
  draw_text(img, "0.0", {bx + 20, top + n * side}, 0.38);
  write_image(img, path);
}

}  // namespace kestrel
