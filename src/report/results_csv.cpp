// results.csv writer with each family's columns and formats (see results_csv.h).
#include "report/results_csv.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace kestrel {
namespace {

// The keys after `epoch` (and Ultralytics' `time`), before the lr of each param group and any extra ones.
const std::array<const char*, 10> kYolov5Keys = {
    "train/box_loss", "train/obj_loss", "train/cls_loss", "metrics/precision", "metrics/recall", "metrics/mAP_0.5",
    "metrics/mAP_0.5:0.95", "val/box_loss", "val/obj_loss", "val/cls_loss"};
const std::array<const char*, 10> kUltralyticsKeys = {
    "train/box_loss", "train/cls_loss", "train/dfl_loss", "metrics/precision(B)", "metrics/recall(B)", "metrics/mAP50(B)",
    "metrics/mAP50-95(B)", "val/box_loss", "val/cls_loss", "val/dfl_loss"};

// One cell: Python's '%20s' / '%20.5g' (YOLOv5) or '%s' / '%.6g' (Ultralytics), comma-terminated;
// printf agrees with Python except that it may print "-nan".
void append_key(std::string& line, const std::string& key, CsvLayout layout) {
  char buf[96];
  std::snprintf(buf, sizeof buf, layout == CsvLayout::yolov5 ? "%20s," : "%s,", key.c_str());
  line += buf;
}

void append_value(std::string& line, double v, CsvLayout layout) {
  char buf[64];
  if (std::isnan(v))
    std::snprintf(buf, sizeof buf, layout == CsvLayout::yolov5 ? "%20s," : "%s,", "nan");
  else
    std::snprintf(buf, sizeof buf, layout == CsvLayout::yolov5 ? "%20.5g," : "%.6g,", v);
  line += buf;
}

// Joined with ',' and terminated by '\n' (both tools strip the trailing comma).
std::string finish(std::string line) {
  line.back() = '\n';
  return line;
}

}  // namespace

std::string ResultsCsv::header_line(const EpochResults& r) const {
  std::string line;
  append_key(line, "epoch", layout_);
  if (layout_ == CsvLayout::ultralytics) append_key(line, "time", layout_);
  for (const char* key : layout_ == CsvLayout::yolov5 ? kYolov5Keys : kUltralyticsKeys) append_key(line, key, layout_);
  for (size_t g = 0; g < r.lr.size(); ++g)
    append_key(line, (layout_ == CsvLayout::yolov5 ? "x/lr" : "lr/pg") + std::to_string(g), layout_);
  for (const auto& extra : r.extra) append_key(line, extra.first, layout_);
  return finish(std::move(line));
}

std::string ResultsCsv::row_line(int epoch, const EpochResults& r) const {
  std::string line;
  const bool ultralytics = layout_ == CsvLayout::ultralytics;
  append_value(line, ultralytics ? epoch + 1 : epoch, layout_);
  if (ultralytics) append_value(line, r.seconds, layout_);
  for (double v : r.train_loss) append_value(line, v, layout_);
  for (double v : {r.precision, r.recall, r.map50, r.map50_95}) append_value(line, v, layout_);
  for (double v : r.val_loss) append_value(line, v, layout_);
  for (double v : r.lr) append_value(line, v, layout_);
  for (const auto& extra : r.extra) append_value(line, extra.second, layout_);
  return finish(std::move(line));
}

void ResultsCsv::append(int epoch, const EpochResults& r) const {
  const std::string text = (std::filesystem::exists(path_) ? std::string() : header_line(r)) + row_line(epoch, r);
  std::FILE* f = std::fopen(path_.c_str(), "a");
  if (!f) throw std::runtime_error("cannot open " + path_ + " for appending");
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) throw std::runtime_error("cannot write " + path_);
}

void ResultsCsv::keep_epochs_before(int epoch) const {
  std::ifstream in(path_);
  if (!in) return;
  std::string kept, line;
  bool dropped = false;
  for (bool header = true; std::getline(in, line); header = false) {
    if (!header && std::stod(line) >= epoch + (layout_ == CsvLayout::ultralytics ? 1 : 0)) {
      dropped = true;
      continue;
    }
    kept += line + "\n";
  }
  in.close();
  if (!dropped) return;
  const std::string tmp = path_ + ".tmp";
  if (!(std::ofstream(tmp) << kept) || std::rename(tmp.c_str(), path_.c_str()) != 0)
    throw std::runtime_error("cannot rewrite " + path_);
}

}  // namespace kestrel
