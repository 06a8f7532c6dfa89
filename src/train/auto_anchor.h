// AutoAnchor as YOLOv5 v7.0 (utils/autoanchor.py): before training, how well the anchors fit the
// dataset's boxes, and when the best possible recall (BPR) is 0.98 or less, new anchors from k-means
// on the label sizes followed by a genetic evolution of 1000 generations, kept only when their BPR is
// higher. A box "fits" an anchor when neither side ratio exceeds hyp anchor_t (4): the same rule the
// loss uses to assign targets, so BPR is the share of labels some anchor can learn at all.
// Every random draw comes from the run's seed. No LibTorch here: the model is changed by the trainer.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "data/types.h"

namespace kestrel {

using AnchorWH = std::array<float, 2>;  // width, height in pixels

struct AnchorFit {
  double bpr = 0;  // share of labels whose best anchor ratio passes 1/thr
  double aat = 0;  // anchors past the threshold per label, on average
};

// check_anchors' metric: r = wh/anchor, x = min(r, 1/r) over w and h (the worse side), then per label
// the best anchor (bpr) and the count of anchors with x > 1/thr (aat).
AnchorFit anchor_fit(const std::vector<AnchorWH>& wh, const std::vector<AnchorWH>& anchors, double thr);

// Label sizes in pixels of images letterboxed to img_size (longest side), each image's sizes scaled
// by a factor in [lo, hi) drawn per image (check_anchors uses 0.9-1.1: the scale augmentation).
std::vector<AnchorWH> label_sizes(const std::vector<ImageRecord>& records, int img_size, uint64_t seed,
                                  double lo = 1.0, double hi = 1.0);

struct AnchorEvolution {
  std::vector<AnchorWH> anchors;  // n anchors, sorted by area, small to large
  double fitness = 0;
  std::string report;             // YOLOv5's kmean_anchors lines (thr, BPR, anchors past thr, the anchors)
};

// kmean_anchors: labels with a side >= 2 px; k-means (30 restarts) on whitened sizes, then `generations`
// mutations (probability 0.9, sigma 0.1, factors 0.3-3, anchors >= 2 px), each kept when its fitness
// (mean best ratio over labels past the threshold) is higher.
AnchorEvolution evolve_anchors(const std::vector<ImageRecord>& records, int n, int img_size, double thr,
                               int generations, uint64_t seed);

struct AutoAnchorResult {
  AnchorFit before, after;
  bool replaced = false;
  std::vector<AnchorWH> anchors;  // the new anchors (pixels, small to large) when replaced
  std::string report;             // what to print
};

// check_anchors with the model's current anchors in pixels (levels in order, na per level).
// `force` (placeholder anchors from `anchors: N` in the yaml) evolves whatever the BPR.
AutoAnchorResult auto_anchor(const std::vector<ImageRecord>& records, const std::vector<AnchorWH>& current,
                             int img_size, double thr, uint64_t seed, bool force = false);

}  // namespace kestrel
