// A line chart written as PNG with OpenCV: a title, labelled axes with units and tick values, one
// coloured line per series and a legend naming them. For the plots a user opens in a run folder
// (training curves side by side, |gamma| distributions of sparsity training).
#pragma once
#include <array>
#include <string>
#include <utility>
#include <vector>

namespace kestrel {

struct ChartSeries {
  std::string name;                             // legend entry
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in order
};

struct LineChart {
  std::string title, x_label, y_label;  // labels carry their units, e.g. "epoch", "loss"
  std::vector<ChartSeries> series;
  bool log_x = false;                   // log10 x axis (points with x <= 0 are left out)
  int width = 900, height = 520;
};

// Writes the chart; throws std::runtime_error naming the path when it cannot.
void write_line_chart(const LineChart& chart, const std::string& path);

// Several charts side by side in one PNG (e.g. box, obj and cls loss), each `chart.width` wide.
void write_line_charts(const std::vector<LineChart>& charts, const std::string& path);

}  // namespace kestrel
