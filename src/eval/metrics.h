// YOLOv5 v7.0 validation metrics: val.py process_batch (matching detections to labels at ten IoU
// thresholds), utils/metrics.py ap_per_class / compute_ap / fitness, val.py's per-image statistics
// and final aggregation (mp, mr, mAP50, mAP50-95, maps) and its results table.
// Everything after matching is float64 and follows numpy's operation order (see numpy_ops.h).
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "data/types.h"
#include "eval/confusion_matrix.h"

namespace kestrel {

// torch.linspace(0.5, 0.95, 10): the IoU thresholds of mAP50-95 (float32).
torch::Tensor iou_thresholds();

// detections [n,6] (x1, y1, x2, y2, conf, cls), labels [m,5] (cls, x1, y1, x2, y2), same pixel
// space; iouv [t] float32. Returns correct [n,t] bool: per threshold, label/detection pairs of the
// same class with IoU >= t, sorted by IoU (descending, numpy's unstable argsort), each detection
// keeping its first pair, then each label keeping its lowest-index detection (greedy, not optimal).
torch::Tensor process_batch(const torch::Tensor& detections, const torch::Tensor& labels,
                            const torch::Tensor& iouv);

// Where a precision/recall curve ends before its envelope is taken. YOLOv5 joins its last point to
// (recall 1, precision 0), crediting recall it never reached; Ultralytics drops precision to 0 at
// the last recall reached (mrec [0, r.., r_last, 1], mpre [1, p.., 0, 0]). The only difference
// between the two families' AP.
enum class PrCurveEnd { at_recall_one, at_last_recall };

// AP of one precision/recall curve: precision envelope, 101-point interpolation, trapezoid rule.
double compute_ap(const std::vector<double>& recall, const std::vector<double>& precision,
                  PrCurveEnd end = PrCurveEnd::at_recall_one);

// ap_per_class's return values, one entry per class that has labels (sorted class ids).
struct ApPerClass {
  std::vector<int> ap_class;
  std::vector<double> tp, fp;  // at the max-F1 confidence: round(r*nt), round(tp/(p+eps) - tp)
  std::vector<double> p, r, f1;
  std::vector<double> ap;      // [classes, niou] row-major
  int niou = 0;
  // The curves YOLOv5 plots, one row per class above: px is the 1000-point grid, of recall for
  // pr_curve (precision envelope at IoU 0.5), of confidence for p_curve, r_curve and f1_curve.
  std::vector<double> px;
  std::vector<std::vector<double>> pr_curve, p_curve, r_curve, f1_curve;
  double ap_at(size_t cls_row, int iou_index) const { return ap[cls_row * niou + iou_index]; }
};

// tp: [n, niou] row-major 0/1; conf, pred_cls: [n]; target_cls: [labels]. Classes without labels
// are dropped; P/R/F1 are read at the argmax of the smoothed mean-F1 curve (1000-point grid).
ApPerClass ap_per_class(const std::vector<uint8_t>& tp, int niou, const std::vector<float>& conf,
                        const std::vector<float>& pred_cls, const std::vector<float>& target_cls,
                        PrCurveEnd end = PrCurveEnd::at_recall_one);

// utils/metrics.py fitness: map50_weight x mAP50 + (1 - map50_weight) x mAP50-95 (P and R weigh 0).
double fitness(double map50, double map, double map50_weight = 0.1);

// How each family scores a validation pass. YOLOv5: detections and labels matched in the original
// image's pixels (predictions clipped to it), the PR curve ending at recall 1, fitness 0.1 mAP50 +
// 0.9 mAP50-95, each class row counting every image. Ultralytics 8.4: matched in the network input's
// (letterboxed) pixels, unclipped; the curve ending at the last recall reached; fitness mAP50-95
// alone; a class row counting the images that hold the class.
struct ScoringRules {
  PrCurveEnd curve_end = PrCurveEnd::at_recall_one;
  double fitness_map50_weight = 0.1;
  bool match_in_input_pixels = false;
  bool images_per_class = false;
};
ScoringRules scoring_rules(bool ultralytics);

struct ClassMetrics {
  int cls = 0;
  int64_t images = 0;     // val.py v7.0 prints the total image count here for every class
  int64_t instances = 0;
  double p = 0, r = 0, ap50 = 0, ap = 0;
};

struct ValMetrics {
  double mp = 0, mr = 0, map50 = 0, map = 0;
  int64_t images = 0, instances = 0;
  std::vector<ClassMetrics> classes;  // classes that have labels, when any detection was correct
  std::vector<double> maps;           // nc entries: per-class mAP50-95, `map` for the others
  double fitness_map50_weight = 0.1;  // the family's (ScoringRules)
  double fitness() const { return kestrel::fitness(map50, map, fitness_map50_weight); }
};

// val.py's `stats` list, flattened: appended per image, in image order.
struct ValStats {
  int niou = 10;
  ScoringRules rules;            // the model family's
  int64_t seen = 0;              // images evaluated
  std::vector<uint8_t> correct;  // [n, niou]
  std::vector<float> conf, pred_cls, target_cls;
  std::vector<int64_t> images_with_class;  // per class id: images whose labels hold it (add_image)

  // Appends one image's entry (val.py: nothing when it has neither predictions nor labels).
  // correct [n,niou] bool, detections [n,6] (conf and cls columns used), target_cls [m].
  void append(const torch::Tensor& correct, const torch::Tensor& detections,
              const torch::Tensor& target_cls);

  // val.py's whole per-image step. pred: [k,6] NMS output in letterboxed pixels; labels: [m,5]
  // class, x, y, w, h normalized to the letterboxed image (img_h x img_w). Both are matched at iouv
  // in original pixels (mapped with `letterbox`), or in letterboxed ones by Ultralytics' rules.
  // single_cls zeroes predicted classes.
  // With `confusion`, the image is also counted in it as val.py does (only images with labels).
  // Returns val.py's predn: the detections in original pixels ([0,6] when there are none).
  torch::Tensor add_image(const torch::Tensor& pred, const torch::Tensor& labels, int img_h, int img_w,
                 const LetterboxInfo& letterbox, const torch::Tensor& iouv, bool single_cls = false,
                 ConfusionMatrix* confusion = nullptr);

  // val.py's aggregation over everything appended so far (nc = number of dataset classes).
  ValMetrics compute(int nc) const;

 private:
  void count_label_classes(const torch::Tensor& label_cls);  // one image's labels into images_with_class
};

// The header line and the 'all' row (plus one row per class when per_class), as val.py prints
// them. val.py prints class rows when (verbose || (nc < 50 && !training)) && nc > 1.
std::string format_val_table(const ValMetrics& metrics, const std::vector<std::string>& names,
                             bool per_class);

}  // namespace kestrel
