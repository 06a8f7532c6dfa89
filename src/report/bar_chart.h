// A horizontal bar chart: one labelled bar per row, its value written at the bar's end, a value axis
// with ticks and its label (with units), and a legend of the bar colours. Drawn for `kestrel tune`
// (epoch time per step of the lever ladder).
#pragma once
#include <opencv2/core.hpp>

#include <string>
#include <vector>

namespace kestrel {

struct Bar {
  std::string label;
  double value = 0;
  int group = 0;  // index into BarChart::groups: its colour and legend entry
};

struct BarChart {
  std::string title, value_label, value_unit;  // value_unit follows each bar's value: "s"
  std::vector<std::string> groups;             // legend entries, one colour each
  std::vector<Bar> bars;                       // top to bottom
};

cv::Mat draw_bar_chart(const BarChart& chart);
// draw_bar_chart, written as PNG or JPEG (by extension); throws naming the path when it cannot.
void write_bar_chart(const BarChart& chart, const std::string& path);

}  // namespace kestrel
