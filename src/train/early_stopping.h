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

  // What a checkpoint keeps of it, so a resumed run stops where the uninterrupted one would.
  struct State {
    int best_epoch = 0;
    double best_fitness = 0.0;
    bool possible_stop = false;
  };
  State state() const { return {best_epoch_, best_fitness_, possible_stop_}; }
  void restore(const State& s) { best_epoch_ = s.best_epoch, best_fitness_ = s.best_fitness, possible_stop_ = s.possible_stop; }

 private:
  int patience_;
  int best_epoch_ = 0;
  double best_fitness_ = 0.0;
  bool possible_stop_ = false;
};

}  // namespace kestrel
