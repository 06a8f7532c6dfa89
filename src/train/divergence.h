// NaN triage: when the optimizer step keeps being skipped for inf/NaN gradients, the run stops with
// a message in plain words (where, what the loss scaler was doing, what was odd in that batch's
// labels) and the remedies in the order that finds the cause: a lower lr0, the labels, AMP off.
// Without a loss scaler a single non-finite step is already abnormal; with one, skipped steps are
// how the scale finds its level, so only a long run of them (the scale fallen 2^25 times) counts.
#pragma once
#include <string>
#include <vector>

#include "data/types.h"

namespace kestrel {

class DivergenceWatch {
 public:
  static constexpr int kLimitWithoutScaler = 3, kLimitWithScaler = 25;
  explicit DivergenceWatch(bool scaler_enabled = false)
      : limit_(scaler_enabled ? kLimitWithScaler : kLimitWithoutScaler) {}

  // After each optimizer step: whether it was taken. True when the run has diverged.
  bool record(bool stepped) {
    consecutive_ = stepped ? 0 : consecutive_ + 1;
    skipped_ += !stepped;
    return consecutive_ >= limit_;
  }
  int consecutive() const { return consecutive_; }
  long long skipped() const { return skipped_; }  // all skipped steps of the run

 private:
  int limit_;
  int consecutive_ = 0;
  long long skipped_ = 0;
};

// What is unusual in a batch's labels (rows: image, class, x, y, w, h normalised): non-finite
// values, classes outside [0, nc), centres outside the image, zero or negative sizes, boxes
// covering more than the image. Empty when nothing is.
std::vector<std::string> odd_label_notes(const Batch& batch, int nc);

struct DivergenceReport {
  int epoch = 0, batch = 0;
  long long step = 0;          // global batch index
  int consecutive = 0;         // skipped steps in a row
  std::string precision;       // fp32, bf16, fp16
  bool scaler = false;
  double scale = 0;            // the loss scale when it stopped
  double lr0 = 0;
  std::string data;            // data.yaml, for the scan command
  std::string last_good;       // the last checkpoint written ("" when none is yet)
  std::vector<std::string> label_notes;  // odd_label_notes of the last batch
  std::vector<std::string> images;       // that batch's image files
  bool labels_checked = true;  // false with --resident (no batch at hand)
};

// The multi-line message the run stops with.
std::string divergence_message(const DivergenceReport& r);

}  // namespace kestrel
