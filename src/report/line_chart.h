// A line chart written as PNG with OpenCV: a title, labelled axes with units and tick values, one
// coloured line per series and a legend naming them. For the plots a user opens in a run folder
// (results.png, the PR/F1/P/R curves, |gamma| distributions of sparsity training).
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <opencv2/core.hpp>

namespace kestrel {

struct ChartSeries {
  std::string name;                               // legend entry ("" = not in the legend)
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in order
  int thickness = 2;
  bool markers = true;                            // a dot at each point
  std::optional<cv::Scalar> colour;               // BGR; default: the chart palette by series index
  bool dotted = false;
};

struct LineChart {
  std::string title, x_label, y_label;  // labels carry their units, e.g. "epoch", "loss"
  std::vector<ChartSeries> series;
  bool log_x = false;                   // log10 x axis (points with x <= 0 are left out)
  std::optional<std::pair<double, double>> x_range, y_range;  // fixed axis ranges (default: the data's)
  bool legend_outside = false;          // legend in a column right of the plot (for many series)
  int width = 900, height = 520;
};

// The chart as an image (BGR), `width` wide (plus the legend column when legend_outside).
cv::Mat render_line_chart(const LineChart& chart);

// Writes the chart; throws std::runtime_error naming the path when it cannot.
void write_line_chart(const LineChart& chart, const std::string& path);

// Several charts in one PNG, `columns` per row (0 = all in one row), each `chart.width` wide.
void write_line_charts(const std::vector<LineChart>& charts, const std::string& path, int columns = 0);

}  // namespace kestrel
