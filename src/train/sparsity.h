// BN-sparsity training (network slimming): S * sign(gamma) added to the gradient of every prunable
// BatchNorm scale (model/channel_prune.h) at each optimizer step, so unimportant channels drift to
// gamma = 0 where `kestrel prune` removes them. --sparsity-decay lowers S linearly to a tenth over
// the run. With a target ratio R (--sparsity-target), only the channels a prune at ratio R would
// remove now (model/channel_prune.h choose_channels, re-chosen at each epoch's start) are
// penalized: the rest keep their scale, where a penalty on every channel shrank the ones that stay
// as well and the cut then cost all accuracy (coco128, yolov5n). Each epoch records the |gamma|
// distribution: the share below kGammaThreshold goes to results.csv, and the histograms to
// gamma_hist.png at the end of the run.
// The penalty shrinks every gamma in the same direction at each step, so the BatchNorm running
// statistics (momentum 0.03: ~33 steps behind) lag the layers they describe, and the lags compound
// through the network: a sparsity run's validation collapsed while its training loss stayed normal.
// So before each validation, the EMA model's statistics are re-estimated on the epoch's last
// training batches, kept for that (as uint8, on their device); best.pt and the last.pt of a
// validated epoch carry them.
#pragma once
#include <torch/torch.h>

#include <string>
#include <vector>

#include "model/channel_prune.h"
#include "model/detection_model.h"
#include "model/precision.h"
#include "train/lr_schedule.h"
#include "train/train_options.h"

namespace kestrel {

// The prune a run's --sparsity-target, --sparsity-cost-weight and --sparsity-multiple describe (ratio 0
// without a target); the other floors are prune's defaults.
PruneOptions sparsity_target_of(const TrainOptions& o);
// The `kestrel prune` flags of a prune, as a user would type them.
std::string prune_flags(const PruneOptions& p);

class SparsityTraining {
 public:
  static constexpr double kGammaThreshold = 0.01;
  static constexpr const char* kCsvKey = "bn/gamma_below_0.01";
  static constexpr int kCalibrationBatches = 8;
  // The share of the target's channels below kGammaThreshold that counts as driven to zero.
  static constexpr double kReachedShare = 0.9;

  SparsityTraining() = default;
  // target: the prune whose channels to penalize (--sparsity-target and its options); ratio 0: all.
  SparsityTraining(DetectionModelImpl& model, double strength, bool decay, int epochs, const PruneOptions& target);
  SparsityTraining(DetectionModelImpl& model, double strength, bool decay, int epochs)  // every channel
      : SparsityTraining(model, strength, decay, epochs, sparsity_target_of(TrainOptions{})) {}
  bool enabled() const { return strength_ > 0; }

  // With a target: chooses the channels to penalize from the current |gamma|. Returns their share.
  double start_epoch();

  // The penalty's gradient, times grad_scale (the fp16 loss scale, as the gradients still carry it).
  void add_penalty(int epoch, double grad_scale);
  double strength_at(int epoch) const;

  // Keeps batch i of nb when it is one of the epoch's last kCalibrationBatches (images in 0..1).
  void keep_batch(const torch::Tensor& images, int i, int nb);
  // Re-estimates `model`'s BatchNorm statistics on the kept batches (train-mode forwards under the
  // run's precision), then lets them go. Returns how many batches it used; with none kept (a run
  // interrupted and resumed after the epoch's last batches) the statistics are left as they are.
  int recalibrate(DetectionModelImpl& model, Precision precision, const torch::Device& device);

  double share_below(double threshold) const;  // of all prunable |gamma|
  // The most the penalty can lower a |gamma| over a run on `schedule` (fresh, epoch 0 on) under SGD:
  // each optimizer step moves it by lr x S, which momentum m carries on to lr x S / (1 - m). The
  // loss's own gradient pushes back, so this is an upper bound.
  double reach(TrainSchedule schedule, int epochs, int batches_per_epoch) const;
  // With a target, said before the run: the share of the target's channels whose |gamma| lies beyond
  // `reach`, and when that is more than a tenth, the --sparsity that would reach nine in ten; ""
  // without a target. (A run of 60 epochs on 64 images could move |gamma| by 0.32: its target's
  // channels stayed live and the prune fell to mAP 0.001.)
  std::string reach_report(double reach) const;
  // With a target: how far the run has brought it, from the |gamma| now (what `kestrel prune` with the
  // target's flags would remove); "" without one. A prune of channels the run did not drive below
  // kGammaThreshold costs accuracy the fine-tune must win back, so the line then says what to change.
  std::string target_report(int epochs, int batches_per_epoch) const;
  void record_epoch(int epoch);                // the histogram for the plot
  void write_plot(const std::string& path) const;

 private:
  // With a target: true for each channel the target prune removes, chosen from the |gamma| now; and
  // those channels' |gamma|, as one float64 tensor on the CPU.
  std::vector<torch::Tensor> target_masks() const;
  torch::Tensor target_gammas() const;

  std::vector<PrunableConv> convs_;
  std::vector<torch::Tensor> masks_;  // with a target: 1 for a penalized channel, else 0
  PruneOptions target_;
  double strength_ = 0;
  bool decay_ = false;
  int epochs_ = 1;
  std::vector<std::pair<int, std::vector<double>>> histograms_;  // epoch, share per bin
  std::vector<torch::Tensor> kept_;                              // uint8 images for recalibrate()
};

}  // namespace kestrel
