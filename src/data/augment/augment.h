// The small pieces of YOLOv5's training augmentation around the geometric warp: label format changes
// (xywhn2xyxy, xyxy2xywhn with its in-place clip), flips and mixup. Label arithmetic is float32 operation
// by operation, as numpy does it on YOLOv5's float32 label arrays.
#pragma once
#include <opencv2/core.hpp>
#include <vector>

#include "data/augment/perspective.h"
#include "data/augment/rng.h"
#include "data/types.h"

namespace kestrel {

// Appends labels as pixel corners: x1 = w*(x - bw/2) + padw, ... (utils/general.py xywhn2xyxy).
void xywhn_to_xyxy(const std::vector<Label>& in, float w, float h, float padw, float padh,
                   std::vector<BoxLabel>& out);

// xyxy2xywhn(w, h, clip=True, eps=1e-3): clips the corners in place to [0, w-eps] x [0, h-eps] (bounds
// rounded to float32), then writes normalized centre/size into `out` (resized to match).
void xyxy_to_xywhn(std::vector<BoxLabel>& boxes, int w, int h, std::vector<Label>& out);

// Ultralytics' RandomFlip and Format on pixel corners (which its warp already clipped to the image):
// centre and size in pixels, the centre flipped as h - y and w - x, then divided by the size, each
// step in float32.
void xyxy_to_xywhn_flipped(const std::vector<BoxLabel>& boxes, int w, int h, bool flip_lr, bool flip_ud,
                           std::vector<Label>& out);

// y -> 1 - y and x -> 1 - x on normalized labels (the image flips are the caller's).
void flip_labels_ud(std::vector<Label>& labels);
void flip_labels_lr(std::vector<Label>& labels);

// mixup's ratio: numpy's Beta(32, 32), drawn as G1 / (G1 + G2) from two Gamma(32) draws.
double draw_mixup_ratio(SampleRng& rng);
// img = uint8(img * r + img2 * (1 - r)) in float64, truncated (utils/augmentations.py mixup).
void mixup_images(cv::Mat& img, const cv::Mat& img2, double r);

}  // namespace kestrel
