// PR / F1 / P / R curves (see curve_plots.h).
#include "report/curve_plots.h"

#include <algorithm>
#include <cstdio>

#include "core/numpy_ops.h"
#include "report/line_chart.h"
#include "report/plot_canvas.h"

namespace kestrel {

namespace {

std::string class_name(const std::vector<std::string>& names, int c) {
  return c >= 0 && static_cast<size_t>(c) < names.size() ? names[c] : std::to_string(c);
}

std::string fixed(double v, int digits) {
  char s[32];
  std::snprintf(s, sizeof s, "%.*f", digits, v);
  return s;
}

std::vector<double> mean_rows(const std::vector<std::vector<double>>& rows) {
  std::vector<double> m(rows.front().size(), 0.0);
  for (const auto& row : rows)
    for (size_t k = 0; k < m.size(); ++k) m[k] += row[k];
  for (double& v : m) v /= static_cast<double>(rows.size());
  return m;
}

ChartSeries series(const std::string& name, const std::vector<double>& x, const std::vector<double>& y, int cls) {
  ChartSeries s{name, {}};
  for (size_t k = 0; k < x.size(); ++k) s.points.emplace_back(x[k], y[k]);
  s.thickness = 2, s.markers = false;
  s.colour = cls >= 0 ? class_colour(cls) : cv::Scalar(180, 119, 31);  // the mean: matplotlib's blue
  if (cls < 0) s.thickness = 3;
  return s;
}

LineChart unit_chart(const std::string& title, const std::string& x_label, const std::string& y_label) {
  LineChart c;
  c.title = title, c.x_label = x_label, c.y_label = y_label;
  c.x_range = std::pair(0.0, 1.0), c.y_range = std::pair(0.0, 1.0);
  c.legend_outside = true, c.width = 640, c.height = 560;
  return c;
}

void write_pr(const ClassCurves& cc, const std::vector<std::string>& names, const std::string& path) {
  LineChart c = unit_chart("Precision-Recall Curve", "Recall", "Precision");
  const bool per_class = cc.classes.size() <= 20;
  for (size_t i = 0; i < cc.classes.size(); ++i)
    c.series.push_back(series(per_class ? class_name(names, cc.classes[i]) + " " + fixed(cc.ap50[i], 3) : "",
                              cc.px, cc.pr[i], cc.classes[i]));
  const double map50 = numpy::mean(cc.ap50);
  c.series.push_back(series("all classes " + fixed(map50, 3) + " mAP@0.5", cc.px, mean_rows(cc.pr), -1));
  write_line_chart(c, path);
}

void write_metric_curve(const ClassCurves& cc, const std::vector<std::vector<double>>& rows,
                        const std::vector<std::string>& names, const std::string& y_label, const std::string& path) {
  LineChart c = unit_chart(y_label + "-Confidence Curve", "Confidence", y_label);
  const bool per_class = cc.classes.size() <= 20;
  for (size_t i = 0; i < cc.classes.size(); ++i)
    c.series.push_back(series(per_class ? class_name(names, cc.classes[i]) : "", cc.px, rows[i], cc.classes[i]));
  const std::vector<double> mean = numpy::box_smooth(mean_rows(rows), 0.05);
  const size_t best = std::max_element(mean.begin(), mean.end()) - mean.begin();
  c.series.push_back(series("all classes " + fixed(mean[best], 2) + " at " + fixed(cc.px[best], 3), cc.px, mean, -1));
  write_line_chart(c, path);
}

}  // namespace

void write_curve_plots(const ClassCurves& cc, const std::vector<std::string>& names, const std::string& dir) {
  if (cc.classes.empty()) return;
  write_pr(cc, names, dir + "/PR_curve.png");
  write_metric_curve(cc, cc.f1, names, "F1", dir + "/F1_curve.png");
  write_metric_curve(cc, cc.p, names, "Precision", dir + "/P_curve.png");
  write_metric_curve(cc, cc.r, names, "Recall", dir + "/R_curve.png");
}

}  // namespace kestrel
