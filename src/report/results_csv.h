// results.csv exactly as YOLOv5 v7.0's logger writes it (utils/loggers/__init__.py): a header of
// '%20s' keys written only when the file is new, then one '%20.5g' row per epoch, comma-joined.
#pragma once
#include <array>
#include <string>
#include <utility>
#include <vector>

namespace kestrel {

// One epoch's row, in results.csv column order after `epoch`.
struct EpochResults {
  std::array<double, 3> train_loss{};  // box, obj, cls (epoch means)
  double precision = 0, recall = 0, map50 = 0, map50_95 = 0;
  std::array<double, 3> val_loss{};    // box, obj, cls
  std::array<double, 3> lr{};          // param groups 0..2 (TrainSchedule::epoch_end_lr)
  // Columns after YOLOv5's, for runs with levers it lacks (e.g. sparsity training): key, value.
  std::vector<std::pair<std::string, double>> extra;
};

class ResultsCsv {
 public:
  static constexpr int kColumns = 14;  // epoch + 13 values
  static const std::array<const char*, kColumns> kKeys;

  explicit ResultsCsv(std::string path) : path_(std::move(path)) {}

  // Appends the epoch's row (writing the header first if the file does not exist yet, so a resumed
  // run continues the same file) and closes the file, so it is always complete on disk.
  // Throws std::runtime_error when the file cannot be written.
  void append(int epoch, const EpochResults& r) const;

  // A resumed run continues from `epoch`: rows of that epoch and later (written by a run killed
  // after its row but before its checkpoint) are dropped, so each epoch appears once.
  void keep_epochs_before(int epoch) const;

  const std::string& path() const { return path_; }

  static std::string header_line(const EpochResults& r = {});     // r's extra keys too; trailing '\n'
  static std::string row_line(int epoch, const EpochResults& r);  // with trailing '\n'

 private:
  std::string path_;
};

}  // namespace kestrel
