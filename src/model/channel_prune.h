// Channel pruning (network slimming): the output channels with the smallest BatchNorm scale
// |gamma| across the whole network are removed, every consumer's input channels with them,
// respecting the structure. Residual adds sum their inputs channel by channel, so the convolutions
// whose outputs meet in one (a C3's cv1 and its bottlenecks' cv2; the second half of a C2f/C3k2's
// cv1 and its bottlenecks' cv2) form a group that loses the same channels, judged by the largest
// |gamma| of the group's channel. A convolution whose output is split (C2f, C3k2 and C2PSA's cv1)
// is pruned per part. Concat, SPPF and C2f concatenate channel sets, Upsample passes them on, a
// depthwise convolution (YOLO11's class branch) follows its input's channels, and the heads' output
// convolutions lose input channels only. Not pruned: C2PSA's attention stream (its heads fix its
// width). A removed channel's output is taken as the constant act(beta) it tends to when gamma -> 0
// (summed over a residual group), and folded into each consumer (BatchNorm mean, or the head's
// bias), so channels with gamma = 0 leave the network's output unchanged (exactly where their
// constant is zero).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/detection_model.h"

namespace kestrel {

struct PrunableConv {
  std::string name;  // module path, e.g. "model.2.cv2"; a part of a split output: "model.2.cv1[1]"
  ConvImpl* conv;
  size_t group;      // convolutions with the same group keep the same channels (a residual chain)
  int64_t first = 0, count = 0;  // the output channels it stands for: all but in a split convolution
  // What one output channel costs a training step, relative to the others: its pixels per input
  // pixel (1 / stride^2) x (multiply-adds per pixel: input channels x kernel area, plus
  // kElementwiseCost for its BatchNorm and activation).
  double channel_cost = 0;

  // This part's rows of a per-output-channel tensor (its BatchNorm's weight, or that weight's gradient).
  torch::Tensor channels(const torch::Tensor& per_channel) const { return per_channel.narrow(0, first, count); }
  torch::Tensor gamma() const { return channels(conv->bn->weight); }
};

// The BatchNorm and SiLU of one output pixel (forward and backward) cost a CPU training step about
// as much as 200 multiply-adds of its convolution: a least-squares fit of time = a x multiply-adds
// + b x activations to yolov5n's 18 convolution layers, each timed alone (320 px, batch 16, 2
// cores), gave b / a = 204, every layer within 15% of its time (model.0 at stride 2: 0.71 G
// multiply-adds, 6.6 M activations, 46 ms; model.8 at stride 32: 0.47 G, 1.2 M, 19 ms).
constexpr double kElementwiseCost = 200;

// The Conv blocks whose output channels may be removed, in layer order, with groups numbered from 0
// in order of first appearance. Throws std::runtime_error naming the layer for a model with layers
// pruning does not support (anything besides Conv, C3, C2f/C3k2, C2PSA, SPPF, Upsample, Concat and
// the two Detect heads) or a fused model (no BatchNorm to judge channels by).
std::vector<PrunableConv> prunable_convs(DetectionModelImpl& model);

struct PruneOptions {
  double ratio = 0.3;    // share of the prunable channels to remove (before the rounding below)
  int min_channels = 8;  // every layer (group) keeps at least this many
  // ...and loses at most this share of its channels: layers whose |gamma| are all small (the neck
  // of a COCO-trained yolov5n) otherwise lost up to 7 in 8 and took most of the accuracy with them
  double max_layer_cut = 0.5;
  int multiple = 8;      // kept counts are rounded up to a multiple of this (vector-friendly widths)
  // Channels are ranked by |gamma| / cost^cost_weight (cost: the group's channel_cost): 0 ranks by
  // |gamma| alone (network slimming), 1 by |gamma| per unit of cost. The stride-2 to stride-8
  // layers of a small model keep large |gamma| but take a third of its step, so a plain 30% cut of
  // yolov5n leaves them whole and gains 1.27x.
  double cost_weight = 0;
};

struct LayerCut {
  std::string name;
  int64_t before = 0, after = 0;
  double gamma_max = 0, gamma_median = 0;  // |gamma| of the layer before the cut
};

struct PruneResult {
  std::shared_ptr<DetectionModelImpl> model;  // a pruned copy; the input model is unchanged
  std::vector<LayerCut> cuts;                 // every prunable conv
  double threshold = 0;                       // the largest |gamma| removed (-1 when none was)
  int64_t channels_before = 0, channels_after = 0;
};

PruneResult prune_channels(const DetectionModelImpl& model, const PruneOptions& options);

// The channels prune_channels keeps of each conv (sorted int64 indices, in `convs` order): the
// smallest |gamma| / cost^cost_weight across the network are removed until
// `ratio` of all are (a group's channel, by the largest |gamma| of its members and the sum of their
// costs, counts once per member), skipping a group once it is down to its floor (min_channels,
// 1 - max_layer_cut of its own); each group's count is then rounded up to `multiple`, keeping its
// largest |gamma|. threshold: the largest |gamma| removed, or -1 when none is.
// Sparsity training with a target (train/sparsity.h) penalizes the others.
struct ChannelChoice {
  std::vector<torch::Tensor> keep;
  double threshold = -1;
};
ChannelChoice choose_channels(const std::vector<PrunableConv>& convs, const PruneOptions& options);

// BatchNorm recalibration: the running statistics are reset and re-estimated as a cumulative average
// over the batches `next_batch` gives (train-mode forwards, no gradients), then the momentum of
// YOLOv5's BatchNorms (0.03) is restored. A pruned network's statistics no longer match what its
// layers see (removed channels were not exactly constant); this puts them back before it is
// judged or fine-tuned. next_batch returns an undefined tensor when out of data.
void recalibrate_batchnorm(DetectionModelImpl& model, const std::function<torch::Tensor()>& next_batch, int batches);

}  // namespace kestrel
