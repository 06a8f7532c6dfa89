// Box format conversions, pairwise IoU and the mapping of predictions from the letterboxed network
// input back to original image pixels, as YOLOv5 v7.0 (utils/general.py, utils/metrics.py box_iou).
// All functions work on float32 tensors on any device, with the same elementwise float32 operations
// as the Python code, so results match bit for bit.
#pragma once
#include <torch/torch.h>

#include "data/types.h"

namespace kestrel {

// [..., 4] centre x, centre y, width, height -> x1, y1, x2, y2 (a new tensor).
torch::Tensor xywh2xyxy(const torch::Tensor& xywh);
// [..., 4] x1, y1, x2, y2 -> centre x, centre y, width, height (a new tensor).
torch::Tensor xyxy2xywh(const torch::Tensor& xyxy);

// Pairwise IoU of xyxy boxes: [N,4] x [M,4] -> [N,M], inter / (area1 + area2 - inter + 1e-7).
torch::Tensor box_iou(const torch::Tensor& box1, const torch::Tensor& box2);

// Clamps xyxy boxes (columns 0..3 of [n, >=4]) in place to [0, width] x [0, height].
void clip_boxes(torch::Tensor& boxes, int height, int width);

// Maps xyxy boxes (columns 0..3, in place) from the letterboxed image back to the original image
// with the loader's recorded ratio and padding (val.py's ratio_pad path: gain = ratio_h; Ultralytics'
// gains per axis when the loader recorded its geometry), then clips them to the original size.
void scale_boxes(torch::Tensor& boxes, const LetterboxInfo& letterbox);

// The same without recorded letterbox geometry (detect.py's path): gain and centred padding are
// derived from the two image sizes. `ultralytics`: its predictor's path, a gain per axis from the
// rounded resized sides and the padding in whole pixels.
void scale_boxes(torch::Tensor& boxes, int letterboxed_h, int letterboxed_w, int orig_h, int orig_w,
                 bool ultralytics = false);

}  // namespace kestrel
