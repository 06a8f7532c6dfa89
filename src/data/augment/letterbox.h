// YOLOv5's letterbox: scale an image to fit a target shape, keeping its aspect ratio, and pad the rest
// with grey 114. Geometry follows utils/augmentations.py letterbox exactly (Python's half-to-even round
// for the resized size, the -0.1/+0.1 split that puts an odd padding pixel bottom/right).
#pragma once
#include <opencv2/core.hpp>

#include "data/types.h"

namespace kestrel {

struct LetterboxGeometry {
  int new_unpad_w, new_unpad_h, top, bottom, left, right;
  double ratio, dw, dh;  // dw/dh: half the total padding (YOLOv5's `pad`), possibly x.5
};

// auto_pad pads only up to a multiple of stride; scaleup=false never enlarges.
LetterboxGeometry letterbox_geometry(int h, int w, int new_h, int new_w, bool auto_pad, bool scaleup, int stride = 32);

// Resizes (INTER_LINEAR, only when the size changes) + pads into `out` (reused when it already has the right
// size and type; same channel count as img). `info`, when given, gets orig_h/orig_w = img's size,
// ratio = (r, r) and pad = (dw, dh). YOLOv5's `shapes` entry for a sample loaded by load_image uses the
// load_image ratio (h/h0, w/w0) instead; the caller knowing h0/w0 sets those fields.
void letterbox(const cv::Mat& img, int new_h, int new_w, bool auto_pad, bool scaleup, cv::Mat& out,
               LetterboxInfo* info, int stride = 32);

// Ultralytics' LetterBox geometry: labels are placed, and predictions mapped back, at the whole-pixel
// offset where the image sits (round(pad - 0.1)), and each axis has its own gain. YOLOv5 shifts labels by
// the unrounded half padding (half a pixel off the image when the padding is odd) and maps back with the
// height's gain. Turns `info` (as letterbox() filled it) from YOLOv5's into Ultralytics'.
void use_ultralytics_geometry(LetterboxInfo& info);

}  // namespace kestrel
