// The labels plot (see labels_plot.h).
#include "report/labels_plot.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

#include "report/plot_canvas.h"

namespace kestrel {

namespace {

constexpr int kPanel = 480, kBins = 50;

PlotFrame panel_frame() {
  PlotFrame f;
  f.area = cv::Rect(80, 56, kPanel - 110, kPanel - 120);
  return f;
}

cv::Mat class_histogram(const std::vector<Label>& labels, const std::vector<std::string>& names) {
  cv::Mat img(kPanel, kPanel, CV_8UC3, cv::Scalar::all(255));
  int nc = std::max<int>(1, static_cast<int>(names.size()));
  for (const Label& l : labels) nc = std::max(nc, static_cast<int>(l.cls) + 1);  // ids past the names still count
  std::vector<double> counts(nc, 0);
  for (const Label& l : labels)
    if (l.cls >= 0) ++counts[static_cast<int>(l.cls)];
  PlotFrame f = panel_frame();
  f.x = {-0.5, nc - 0.5};
  f.y = {0, std::max(1.0, *std::max_element(counts.begin(), counts.end()) * 1.05)};
  const bool named = nc <= 12;
  draw_frame(img, f, {"instances per class (" + std::to_string(labels.size()) + " labels)",
                      named ? "" : "class index", "instances",
                      [](double) { return std::string(); }});  // bars carry their own names below
  const int bar = std::max(1, f.area.width / nc - 2);
  const int every = (nc + 9) / 10;  // unnamed: every k-th index, at most 10 under the axis
  for (int c = 0; c < nc; ++c) {
    const int cx = f.px(c);
    cv::rectangle(img, {cx - bar / 2, f.py(counts[c])}, {cx + bar / 2, f.py(0)}, class_colour(c), cv::FILLED);
    const std::string name = c < static_cast<int>(names.size()) ? names[c] : std::to_string(c);
    const std::string n = named ? name.substr(0, std::max(3, 60 / nc)) : c % every ? "" : std::to_string(c);
    draw_text(img, n, {cx - 3 * static_cast<int>(n.size()), f.area.y + f.area.height + (named ? 36 : 18)}, 0.35);
  }
  return img;
}

cv::Mat box_shapes(const std::vector<Label>& labels) {
  cv::Mat img(kPanel, kPanel, CV_8UC3, cv::Scalar::all(255));
  PlotFrame f = panel_frame();
  f.x = {-0.5, 0.5}, f.y = {-0.5, 0.5};
  draw_frame(img, f, {"box shapes (first 1000, centred)", "width (fraction of image)", "height"});
  for (size_t i = 0; i < std::min<size_t>(labels.size(), 1000); ++i) {
    const Label& l = labels[i];
    cv::rectangle(img, {f.px(-l.w / 2), f.py(l.h / 2)}, {f.px(l.w / 2), f.py(-l.h / 2)}, class_colour(static_cast<int>(l.cls)), 1);
  }
  return img;
}

// A 2-D histogram of (a, b) over [0, 1]^2 as shades of blue, with a colour bar naming the counts.
cv::Mat histogram_2d(const std::vector<Label>& labels, bool centres) {
  cv::Mat img(kPanel, kPanel, CV_8UC3, cv::Scalar::all(255));
  PlotFrame f = panel_frame();
  f.area.width -= 40;
  f.x = {0, 1}, f.y = {0, 1};
  std::vector<int> bins(kBins * kBins, 0);
  for (const Label& l : labels) {
    const double a = centres ? l.x : l.w, b = centres ? l.y : l.h;
    const int i = std::clamp(static_cast<int>(a * kBins), 0, kBins - 1), j = std::clamp(static_cast<int>(b * kBins), 0, kBins - 1);
    ++bins[j * kBins + i];
  }
  const int most = std::max(1, *std::max_element(bins.begin(), bins.end()));
  auto shade = [&](double t) { return cv::Scalar(255 - 100 * t, 245 - 200 * t, 240 - 230 * t); };
  for (int j = 0; j < kBins; ++j)
    for (int i = 0; i < kBins; ++i)
      if (bins[j * kBins + i])
        cv::rectangle(img, {f.px(double(i) / kBins), f.py(double(j + 1) / kBins)}, {f.px(double(i + 1) / kBins), f.py(double(j) / kBins)},
                      shade(std::log1p(bins[j * kBins + i]) / std::log1p(most)), cv::FILLED);
  draw_frame(img, f, {centres ? "box centres" : "box sizes", centres ? "x (fraction of image width)" : "width (fraction of image)",
                      centres ? "y (fraction of height)" : "height (fraction)"});
  const int bx = f.area.x + f.area.width + 12;  // colour bar: labels per bin, log scale
  for (int y = 0; y < f.area.height; ++y)
    cv::line(img, {bx, f.area.y + y}, {bx + 12, f.area.y + y}, shade(1.0 - double(y) / f.area.height));
  draw_text(img, std::to_string(most), {bx - 2, f.area.y - 4}, 0.35);
  draw_text(img, "1", {bx + 2, f.area.y + f.area.height + 14}, 0.35);
  draw_text(img, "per bin", {bx - 14, f.area.y + f.area.height + 28}, 0.35);
  return img;
}

}  // namespace

void write_labels_plot(const std::vector<Label>& labels, const std::vector<std::string>& names, const std::string& path) {
  cv::Mat top, bottom, all;
  cv::hconcat(class_histogram(labels, names), box_shapes(labels), top);
  cv::hconcat(histogram_2d(labels, true), histogram_2d(labels, false), bottom);
  cv::vconcat(top, bottom, all);
  write_image(all, path);
}

}  // namespace kestrel
