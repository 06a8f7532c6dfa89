// results.csv -> results.png (see results_plot.h).
#include "report/results_plot.h"

#include <array>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "report/line_chart.h"

namespace kestrel {

namespace {

std::string trimmed(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::vector<std::string> split_commas(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream ss(line);
  for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(trimmed(cell));
  return cells;
}

// Column names and the units their panel's y axis shows.
struct Panel {
  const char* key;
  const char* y_label;
};
using Panels = std::array<Panel, 10>;
constexpr Panels kYolov5Panels = {{{"train/box_loss", "loss"}, {"train/obj_loss", "loss"}, {"train/cls_loss", "loss"},
                                   {"metrics/precision", "precision"}, {"metrics/recall", "recall"},
                                   {"val/box_loss", "loss"}, {"val/obj_loss", "loss"}, {"val/cls_loss", "loss"},
                                   {"metrics/mAP_0.5", "mAP"}, {"metrics/mAP_0.5:0.95", "mAP"}}};
constexpr Panels kUltralyticsPanels = {{{"train/box_loss", "loss"}, {"train/cls_loss", "loss"}, {"train/dfl_loss", "loss"},
                                        {"metrics/precision(B)", "precision"}, {"metrics/recall(B)", "recall"},
                                        {"val/box_loss", "loss"}, {"val/cls_loss", "loss"}, {"val/dfl_loss", "loss"},
                                        {"metrics/mAP50(B)", "mAP"}, {"metrics/mAP50-95(B)", "mAP"}}};

}  // namespace

ResultsTable read_results_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read");
  ResultsTable t;
  std::string line;
  if (!std::getline(in, line)) throw std::runtime_error(path + ": empty file");
  t.keys = split_commas(line);
  for (int number = 2; std::getline(in, line); ++number) {
    if (trimmed(line).empty()) continue;
    const std::vector<std::string> cells = split_commas(line);
    if (cells.size() != t.keys.size())
      throw std::runtime_error(path + ":" + std::to_string(number) + ": " + std::to_string(cells.size()) +
                               " values for " + std::to_string(t.keys.size()) + " columns");
    std::vector<double> row;
    for (const std::string& c : cells) {
      char* end = nullptr;
      const double v = std::strtod(c.c_str(), &end);
      if (c.empty() || *end) throw std::runtime_error(path + ":" + std::to_string(number) + ": '" + c + "' is not a number");
      row.push_back(v);
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::vector<double> gaussian_smooth(const std::vector<double>& v, double sigma) {
  const int n = static_cast<int>(v.size()), radius = static_cast<int>(4.0 * sigma + 0.5);
  std::vector<double> weights(2 * radius + 1);
  double total = 0;
  for (int k = -radius; k <= radius; ++k) total += weights[k + radius] = std::exp(-0.5 * k * k / (sigma * sigma));
  auto at = [&](int i) {  // scipy's 'reflect': (d c b a | a b c d | d c b a)
    const int period = 2 * n;
    i = ((i % period) + period) % period;
    return v[i < n ? i : period - 1 - i];
  };
  std::vector<double> out(v.size());
  for (int i = 0; i < n; ++i) {
    double s = 0;
    for (int k = -radius; k <= radius; ++k) s += weights[k + radius] * at(i + k);
    out[i] = s / total;
  }
  return out;
}

void write_results_plot(const std::string& csv_path, const std::string& png_path) {
  const ResultsTable t = read_results_csv(csv_path);
  std::vector<LineChart> charts;
  // Ultralytics' file has a `time` column second (results_csv.h).
  const bool ultralytics = t.keys.size() > 1 && t.keys[1] == "time";
  for (const Panel& p : ultralytics ? kUltralyticsPanels : kYolov5Panels) {
    LineChart c;
    c.title = p.key, c.x_label = "epoch", c.y_label = p.y_label;
    c.width = 420, c.height = 340;
    size_t col = 0;
    while (col < t.keys.size() && t.keys[col] != p.key) ++col;
    if (col == t.keys.size()) throw std::runtime_error(csv_path + ": no '" + p.key + "' column");
    ChartSeries values{"results", {}}, smooth{"smooth", {}};
    std::vector<double> ys;
    for (const auto& row : t.rows) {
      values.points.emplace_back(row[0], row[col]);
      ys.push_back(row[col]);
    }
    const std::vector<double> s = gaussian_smooth(ys, 3);
    for (size_t i = 0; i < s.size(); ++i) smooth.points.emplace_back(t.rows[i][0], s[i]);
    smooth.markers = false, smooth.dotted = true;
    c.series = {values, smooth};
    charts.push_back(std::move(c));
  }
  write_line_charts(charts, png_path, 5);
}

}  // namespace kestrel
