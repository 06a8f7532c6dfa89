// results.png as YOLOv5's plot_results lays it out: ten panels against epoch, train box/obj/cls loss,
// precision and recall on top, val box/obj/cls loss, mAP@0.5 and mAP@0.5:0.95 below, each with the
// values and a smoothed line. Read from results.csv, so it can be drawn for any run folder.
#pragma once
#include <string>
#include <vector>

namespace kestrel {

// The columns of a results.csv: header keys (trimmed) and one row of values per epoch.
struct ResultsTable {
  std::vector<std::string> keys;
  std::vector<std::vector<double>> rows;
};

// Throws std::runtime_error naming the file and line for a row that does not parse.
ResultsTable read_results_csv(const std::string& path);

// Gaussian smoothing as scipy's gaussian_filter1d (reflected edges, truncated at 4 sigma).
std::vector<double> gaussian_smooth(const std::vector<double>& v, double sigma);

void write_results_plot(const std::string& csv_path, const std::string& png_path);

}  // namespace kestrel
