// The pictures of a validation pass, as val.py's plots: val_batch0-2_labels.jpg / _pred.jpg while the
// pass runs, then confusion_matrix.png and the PR/F1/P/R curves from its statistics.
#pragma once
#include <torch/torch.h>

#include <string>
#include <vector>

#include "data/types.h"
#include "eval/confusion_matrix.h"
#include "eval/metrics.h"

namespace kestrel {

// Batch `index` (< 3 are drawn) with its labels and, beside it, its NMS output (letterboxed pixels).
void write_val_batch_plots(const std::string& dir, int index, const Batch& batch,
                           const std::vector<torch::Tensor>& preds, const std::vector<std::string>& names);

// confusion_matrix.png, PR_curve.png, F1_curve.png, P_curve.png and R_curve.png.
void write_val_summary_plots(const std::string& dir, const ConfusionMatrix& confusion, const ValStats& stats,
                             const std::vector<std::string>& names);

}  // namespace kestrel
