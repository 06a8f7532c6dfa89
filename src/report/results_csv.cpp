// results.csv writer with YOLOv5's column formats (see results_csv.h).
#include "report/results_csv.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace kestrel {
namespace {

// Python's '%20.5g' of a float; printf agrees except that it may print "-nan".
void append_value(std::string& line, double v) {
  char buf[64];
  if (std::isnan(v))
    std::snprintf(buf, sizeof buf, "%20s,", "nan");
  else
    std::snprintf(buf, sizeof buf, "%20.5g,", v);
  line += buf;
}

// Joined with ',' and terminated by '\n' (YOLOv5 strips the trailing comma).
std::string finish(std::string line) {
  line.back() = '\n';
  return line;
}

}  // namespace

const std::array<const char*, ResultsCsv::kColumns> ResultsCsv::kKeys = {
    "epoch",        "train/box_loss", "train/obj_loss", "train/cls_loss",       "metrics/precision",
    "metrics/recall", "metrics/mAP_0.5", "metrics/mAP_0.5:0.95", "val/box_loss", "val/obj_loss",
    "val/cls_loss", "x/lr0",          "x/lr1",          "x/lr2"};

std::string ResultsCsv::header_line(const EpochResults& r) {
  std::string line;
  char buf[64];
  for (const char* key : kKeys) {
    std::snprintf(buf, sizeof buf, "%20s,", key);
    line += buf;
  }
  for (const auto& [key, value] : r.extra) {
    std::snprintf(buf, sizeof buf, "%20s,", key.c_str());
    line += buf;
  }
  return finish(std::move(line));
}

std::string ResultsCsv::row_line(int epoch, const EpochResults& r) {
  std::string line;
  append_value(line, epoch);
  for (double v : r.train_loss) append_value(line, v);
  for (double v : {r.precision, r.recall, r.map50, r.map50_95}) append_value(line, v);
  for (double v : r.val_loss) append_value(line, v);
  for (double v : r.lr) append_value(line, v);
  for (const auto& [key, v] : r.extra) append_value(line, v);
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
    if (!header && std::stod(line) >= epoch) {
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
