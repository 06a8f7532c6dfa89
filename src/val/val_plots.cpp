// Validation pictures (see val_plots.h).
#include "val/val_plots.h"

#include "report/batch_plot.h"
#include "report/confusion_plot.h"
#include "report/curve_plots.h"

namespace kestrel {

void write_val_batch_plots(const std::string& dir, int index, const Batch& batch,
                           const std::vector<torch::Tensor>& preds, const std::vector<std::string>& names) {
  if (index >= 3) return;
  BatchPicture picture = picture_of(batch);
  const std::string stem = dir + "/val_batch" + std::to_string(index);
  write_batch_plot(picture, names, stem + "_labels.jpg");
  picture.boxes.clear();
  for (size_t i = 0; i < preds.size(); ++i) {
    const torch::Tensor p = preds[i].to(torch::kCPU, torch::kFloat32).contiguous();
    const float* v = p.data_ptr<float>();
    for (int64_t k = 0; k < p.size(0); ++k, v += 6)
      picture.boxes.push_back({static_cast<int>(i), static_cast<int>(v[5]), v[4], v[0], v[1], v[2], v[3]});
  }
  write_batch_plot(picture, names, stem + "_pred.jpg");
}

void write_val_summary_plots(const std::string& dir, const ConfusionMatrix& confusion, const ValStats& stats,
                             const std::vector<std::string>& names) {
  write_confusion_plot(confusion.matrix(), confusion.nc(), names, dir + "/confusion_matrix.png");
  const ApPerClass ap = ap_per_class(stats.correct, stats.niou, stats.conf, stats.pred_cls, stats.target_cls);
  ClassCurves curves{ap.px, ap.ap_class, ap.pr_curve, ap.p_curve, ap.r_curve, ap.f1_curve, {}};
  for (size_t i = 0; i < ap.ap_class.size(); ++i) curves.ap50.push_back(ap.ap_at(i, 0));
  write_curve_plots(curves, names, dir);
}

}  // namespace kestrel
