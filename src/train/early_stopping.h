// YOLOv5 v7.0 EarlyStopping: stop when fitness has not improved for `patience` epochs.
#pragma once

namespace kestrel {

class EarlyStopping {
 public:
  // patience 0 means never stop (YOLOv5: `patience or inf`).
  explicit EarlyStopping(int patience = 30) : patience_(patience) {}

  // Call after each epoch's validation. A fitness >= the best so far (ties included, so an early
  // all-zero stretch keeps moving best_epoch) becomes the best. Returns true when
  // epoch - best_epoch >= patience.
  bool operator()(int epoch, double fitness);

  int best_epoch() const { return best_epoch_; }
  double best_fitness() const { return best_fitness_; }
  // True when the next epoch without improvement would stop training.
  bool possible_stop() const { return possible_stop_; }

 private:
  int patience_;
  int best_epoch_ = 0;
  double best_fitness_ = 0.0;
  bool possible_stop_ = false;
};

}  // namespace kestrel
