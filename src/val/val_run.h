// `kestrel val` as a library call: val.py with given weights on a split of a data.yaml. The model keeps
// the class count and names it was trained with; weights trained on data of another class count are
// refused with a message naming both (unless single_cls, which scores every class as one).
#pragma once
#include <string>

#include "val/validator.h"

namespace kestrel {

struct ValRunOptions {
  std::string weights, cfg, data, task = "val", device = "cpu";
  ValOptions val;
  bool half = false;     // --half: val.precision from inference_precision
  bool verbose = false;  // per-class rows also for 50 classes or more
};

ValResult run_val(const ValRunOptions& options);

}  // namespace kestrel
