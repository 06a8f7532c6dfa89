// Validation as val.py runs it: rectangular letterboxed batches (pad 0.5), the model's decoded
// output, NMS (conf 0.001, IoU 0.6, multi-label, 300 detections), matching at ten IoU thresholds,
// AP per class; optionally the validation loss on the raw outputs. An Ultralytics model is scored by
// its family's rules: NMS without objectness at IoU 0.7, its AP curve end and fitness. The loader (and its threads)
// persists across calls, so validating every epoch costs no start-up.
#pragma once
#include <torch/torch.h>

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/loader/loader.h"
#include "eval/metrics.h"
#include "model/detection_model.h"
#include "model/precision.h"

namespace kestrel {

struct ValOptions {
  int img_size = 640;
  int batch_size = 32;
  int workers = 2;
  double conf_thres = 0.001;
  std::optional<double> iou_thres;  // unset: the model family's (val_nms_options)
  std::optional<int> max_det;       // likewise
  bool single_cls = false;
  Precision precision = Precision::fp32;  // forward under autocast unless fp32 (model/precision.h)
  bool progress = true;         // progress bar while validating
  CacheMode cache = CacheMode::none;
  bool ultralytics = false;  // an Ultralytics model: its loading rule (LoaderOptions::ultralytics)
};

struct ValResult {
  ValMetrics metrics;
  std::array<double, 3> loss{};  // mean box/obj/cls validation loss (zeros when no loss given)
  double seconds = 0;            // wall time of the whole pass
  double ms_pre = 0, ms_inference = 0, ms_nms = 0;  // per image, as val.py's "Speed:" line
};

// What a pass writes beside its metrics: val.py's plots, and each image's detections for --save-txt
// and --save-json.
struct ValOutputs {
  std::string plot_dir;  // val_batch0-2 pictures, confusion matrix, PR/F1/P/R curves ("" = none)
  // Per image: its path, its detections [k,6] (x1, y1, x2, y2, conf, cls) in original pixels, its size.
  std::function<void(const std::string& path, const torch::Tensor& predn, const LetterboxInfo& shape)> on_image;
};

// (raw per-level outputs, targets [n,6]) -> detached [lbox, lobj, lcls].
using ValLossFn = std::function<torch::Tensor(const std::vector<torch::Tensor>&, const torch::Tensor&)>;

class Validator {
 public:
  Validator(std::vector<ImageRecord> records, std::vector<std::string> names, ValOptions options);
  // Runs one pass over the validation set with `model` (put in eval mode for the pass and restored).
  ValResult run(DetectionModelImpl& model, const torch::Device& device, const ValLossFn& loss = nullptr,
                const ValOutputs& outputs = {});
  size_t images() const { return loader_.size(); }
  const std::vector<std::string>& names() const { return names_; }
  void set_precision(Precision p) { options_.precision = p; }  // the run's --amp, switched mid-run by its check

 private:
  std::vector<std::string> names_;
  ValOptions options_;
  Loader loader_;
};

// The most objects an image of a split holds, by split name ("train", "val"): what fit_max_det checks.
using SplitObjectCounts = std::vector<std::pair<std::string, size_t>>;
size_t most_objects(const std::vector<ImageRecord>& records);

// When an image holds more objects than max_det lets through, recall is capped and the metrics are
// wrong. An Ultralytics model then validates with max_det raised to that count, as 8.4's
// DetectionValidator does (over train and val in training, the split alone in `val`); a --max-det the
// user gave is kept, and a YOLOv5 model keeps val.py's 300. Each case prints a warning that says so.
void fit_max_det(ValOptions& options, const SplitObjectCounts& counts);

// The "Speed: ..." line val.py prints.
std::string format_val_speed(const ValResult& r, int img_size, int batch_size);

}  // namespace kestrel
