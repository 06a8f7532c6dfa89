// BN-sparsity training (network slimming): S * sign(gamma) added to the gradient of every prunable
// BatchNorm scale (model/channel_prune.h) at each optimizer step, so unimportant channels drift to
// gamma = 0 where `kestrel prune` removes them. --sparsity-decay lowers S linearly to a tenth over
// the run. Each epoch records the |gamma| distribution: the share below kGammaThreshold goes to
// results.csv, and the histograms to gamma_hist.png at the end of the run.
#pragma once
#include <torch/torch.h>

#include <string>
#include <vector>

#include "model/detection_model.h"

namespace kestrel {

class SparsityTraining {
 public:
  static constexpr double kGammaThreshold = 0.01;
  static constexpr const char* kCsvKey = "bn/gamma_below_0.01";

  SparsityTraining() = default;
  SparsityTraining(DetectionModelImpl& model, double strength, bool decay, int epochs);
  bool enabled() const { return strength_ > 0; }

  // The penalty's gradient, times grad_scale (the fp16 loss scale, as the gradients still carry it).
  void add_penalty(int epoch, double grad_scale);
  double strength_at(int epoch) const;

  double share_below(double threshold) const;  // of all prunable |gamma|
  void record_epoch(int epoch);                // the histogram for the plot
  void write_plot(const std::string& path) const;

 private:
  std::vector<torch::Tensor> gammas_;
  double strength_ = 0;
  bool decay_ = false;
  int epochs_ = 1;
  std::vector<std::pair<int, std::vector<double>>> histograms_;  // epoch, share per bin
};

}  // namespace kestrel
