// results.csv exactly as each family's trainer writes it, the header only when the file is new.
// YOLOv5 v7.0 (utils/loggers/__init__.py): '%20s' keys, then one '%20.5g' row per epoch from 0.
// Ultralytics (BaseTrainer.save_metrics): plain keys with its names ("metrics/mAP50-95(B)", the loss
// terms box, cls, dfl, "lr/pg0".. one per param group), '%.6g' rows of the epoch from 1 and the
// seconds since training started.
#pragma once
#include <array>
#include <string>
#include <utility>
#include <vector>

namespace kestrel {

// One epoch's row, in results.csv column order after `epoch`.
struct EpochResults {
  double seconds = 0;                  // since training started (Ultralytics' `time` column)
  std::array<double, 3> train_loss{};  // box, obj, cls or box, cls, dfl (epoch means)
  double precision = 0, recall = 0, map50 = 0, map50_95 = 0;
  std::array<double, 3> val_loss{};    // as train_loss
  std::vector<double> lr{0, 0, 0};     // each param group's, in the order the family logs them (x/lr0.., lr/pg0..)
  // Columns after YOLOv5's, for runs with levers it lacks (e.g. sparsity training): key, value.
  std::vector<std::pair<std::string, double>> extra;
};

enum class CsvLayout { yolov5, ultralytics };

class ResultsCsv {
 public:
  explicit ResultsCsv(std::string path, CsvLayout layout = CsvLayout::yolov5) : path_(std::move(path)), layout_(layout) {}

  // Appends the epoch's row (writing the header first if the file does not exist yet, so a resumed
  // run continues the same file) and closes the file, so it is always complete on disk.
  // Throws std::runtime_error when the file cannot be written.
  void append(int epoch, const EpochResults& r) const;

  // A resumed run continues from `epoch` (counted from 0): rows of that epoch and later (written by a
  // run killed after its row but before its checkpoint) are dropped, so each epoch appears once.
  void keep_epochs_before(int epoch) const;

  const std::string& path() const { return path_; }

  std::string header_line(const EpochResults& r = {}) const;     // r's extra keys too; trailing '\n'
  std::string row_line(int epoch, const EpochResults& r) const;  // epoch from 0; trailing '\n'

 private:
  std::string path_;
  CsvLayout layout_;
};

}  // namespace kestrel
