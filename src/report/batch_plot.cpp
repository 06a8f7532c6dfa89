// Batch mosaics with boxes (see batch_plot.h).
#include "report/batch_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <opencv2/imgproc.hpp>

#include "report/plot_canvas.h"

namespace kestrel {

namespace {

// Image i of an RGB NCHW batch as a BGR HWC picture.
cv::Mat batch_image(const BatchPicture& b, int i) {
  const size_t plane = static_cast<size_t>(b.h) * b.w;
  const uint8_t* base = b.pixels.data() + 3 * plane * i;
  std::vector<cv::Mat> channels;  // B, G, R from the R, G, B planes
  for (int c = 2; c >= 0; --c) channels.emplace_back(b.h, b.w, CV_8UC1, const_cast<uint8_t*>(base + c * plane));
  cv::Mat bgr;
  cv::merge(channels, bgr);
  return bgr;
}

std::string box_label(const PlotBox& box, const std::vector<std::string>& names) {
  std::string s = box.cls >= 0 && static_cast<size_t>(box.cls) < names.size() ? names[box.cls] : std::to_string(box.cls);
  if (box.conf >= 0) {
    char c[16];
    std::snprintf(c, sizeof c, " %.1f", box.conf);
    s += c;
  }
  return s;
}

}  // namespace

BatchPicture picture_of(const Batch& b) {
  BatchPicture p{b.n, b.h, b.w, {b.pixels.begin(), b.pixels.end()}, b.paths, {}};
  for (size_t k = 0; k < b.num_labels(); ++k) {
    const float* l = b.labels.data() + 6 * k;  // image, class, x, y, w, h
    const float x = l[2] * b.w, y = l[3] * b.h, w = l[4] * b.w, h = l[5] * b.h;
    p.boxes.push_back({static_cast<int>(l[0]), static_cast<int>(l[1]), -1, x - w / 2, y - h / 2, x + w / 2, y + h / 2});
  }
  return p;
}

void write_batch_plot(const BatchPicture& b, const std::vector<std::string>& names, const std::string& path) {
  const int n = std::min(b.n, 16);
  const int grid = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(std::max(n, 1)))));
  const double scale = std::min(1.0, 1920.0 / (grid * std::max(b.h, b.w)));
  const int h = static_cast<int>(b.h * scale), w = static_cast<int>(b.w * scale);
  cv::Mat mosaic(grid * h, grid * w, CV_8UC3, cv::Scalar::all(255));
  const int thickness = std::max(1, static_cast<int>(std::lround(0.002 * (mosaic.rows + mosaic.cols) / 2)));
  for (int i = 0; i < n; ++i) {
    const cv::Rect cell((i % grid) * w, (i / grid) * h, w, h);
    cv::resize(batch_image(b, i), mosaic(cell), {w, h}, 0, 0, cv::INTER_AREA);
    cv::rectangle(mosaic, cell, cv::Scalar::all(255), 2);
    if (i < static_cast<int>(b.paths.size()))
      draw_text(mosaic, std::filesystem::path(b.paths[i]).filename().string().substr(0, 40), {cell.x + 5, cell.y + 18}, 0.5,
                {220, 220, 220});
  }
  for (const PlotBox& box : b.boxes) {
    if (box.image >= n || (box.conf >= 0 && box.conf <= 0.25f)) continue;
    const int ox = (box.image % grid) * w, oy = (box.image / grid) * h;
    const cv::Point p1(ox + static_cast<int>(box.x1 * scale), oy + static_cast<int>(box.y1 * scale));
    const cv::Point p2(ox + static_cast<int>(box.x2 * scale), oy + static_cast<int>(box.y2 * scale));
    const cv::Scalar colour = class_colour(box.cls);
    cv::rectangle(mosaic, p1, p2, colour, thickness, cv::LINE_AA);
    const std::string label = box_label(box, names);
    int base = 0;
    const cv::Size ts = cv::getTextSize(label, cv::FONT_HERSHEY_SIMPLEX, 0.4, 1, &base);
    const cv::Point t1(p1.x, std::max(p1.y - ts.height - 4, oy));
    cv::rectangle(mosaic, t1, {t1.x + ts.width + 2, t1.y + ts.height + 4}, colour, cv::FILLED);
    draw_text(mosaic, label, {t1.x + 1, t1.y + ts.height + 1}, 0.4, cv::Scalar::all(255));
  }
  write_image(mosaic, path);
}

}  // namespace kestrel
