// YOLOv5 v7.0 EarlyStopping (see early_stopping.h).
#include "train/early_stopping.h"

namespace kestrel {

bool EarlyStopping::operator()(int epoch, double fitness) {
  if (fitness >= best_fitness_) {
    best_epoch_ = epoch;
    best_fitness_ = fitness;
  }
  if (patience_ <= 0) {  // infinite patience
    possible_stop_ = false;
    return false;
  }
  const int delta = epoch - best_epoch_;
  possible_stop_ = delta >= patience_ - 1;
  return delta >= patience_;
}

}  // namespace kestrel
