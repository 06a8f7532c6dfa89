// `kestrel val` as a library call: val.py with given weights on a split of a data.yaml. The model keeps
// the class count and names it was trained with; weights trained on data of another class count are
// refused with a message naming both (unless single_cls, which scores every class as one). Plots and
// saved detections go to runs/val/expN, as val.py's.
#pragma once
#include <optional>
#include <string>

#include "val/validator.h"

namespace kestrel {

struct ValRunOptions {
  std::string weights, cfg, data, task = "val", device;  // "" = GPU 0 when there is one
  ValOptions val;
  std::optional<int> batch_size;  // unset: the family's default, val.py's 32 or Ultralytics' 16
  bool half = false;     // --half: val.precision from inference_precision
  bool verbose = false;  // per-class rows also for 50 classes or more
  std::string project = "runs/val", name = "exp";  // the run folder, project/name[N]
  bool exist_ok = false;
  bool save_txt = false, save_conf = false;  // labels/<stem>.txt per image with detections
  bool save_json = false;                    // <weights stem>_predictions.json, COCO results format
  bool noplots = false;                      // no confusion matrix, curves or val_batch pictures
};

ValResult run_val(const ValRunOptions& options);

}  // namespace kestrel
