// One dataset item as YOLOv5's LoadImagesAndLabels.__getitem__ builds it: the training path (mosaic or
// letterbox, random perspective, mixup, HSV, flips) and the validation path (letterbox only).
// All randomness comes from the SampleRng passed in; the order of draws is fixed (see sample.cpp), so a
// sample depends only on the generator's seed.
#pragma once
#include <functional>
#include <opencv2/core.hpp>
#include <utility>
#include <vector>

#include "core/hyp.h"
#include "data/io/image_decode.h"
#include "data/augment/rng.h"
#include "data/types.h"

namespace kestrel {

// An image already resized by load_image_resized (long side == img_size), with its labels (normalized xywh).
struct LoadedImage {
  cv::Mat bgr;
  int orig_h = 0, orig_w = 0;
  const std::vector<Label>* labels = nullptr;
};
// Loads image `index`. `needed`, when given, is the part of it the sample will read: a loader may leave
// the rest undefined (DecodeRegion); null means the whole image.
using ImageLoader = std::function<LoadedImage(size_t index, const DecodeRegion* needed)>;
// The size image `index` will have once loaded, known without loading it (from the dataset index);
// cv::Size() when unknown.
using ImageSizer = std::function<cv::Size(size_t index)>;

// Where samples get their images. With a sizer, mosaic tiles are loaded with the region their warp reads.
struct ImageSource {
  ImageSource(ImageLoader load, ImageSizer loaded_size = {}) : load(std::move(load)), loaded_size(std::move(loaded_size)) {}
  ImageLoader load;
  ImageSizer loaded_size;
};

// One sample ready for collation: image BGR HWC uint8 (all samples of a batch have the same size),
// labels normalized xywh relative to that image, letterbox info (orig size, ratio, pad) for validation.
struct Sample {
  cv::Mat bgr;
  std::vector<Label> labels;
  LetterboxInfo info;
};

struct SampleOptions {
  // true: warp straight from the source images (mosaic without its 2s x 2s canvas, flips folded into the
  // warp, HSV in strips or fused) instead of YOLOv5's formulation (canvas + cv::warpAffine, whole-image HSV,
  // separate flips). Both give identical bytes and labels. The direct path is the default: with YOLOv5's
  // default hyp (no rotation or shear) its warp is separable and measured 0.58 vs 1.50 ms per mosaic +
  // perspective at img 640 on one thread (bench/bench_augment.cpp), and it needs no canvas memory.
  bool direct_warp = true;
  // With the direct path: HSV through the fused kernel (augment_hsv_fast: one pass, about 0.6x the time of
  // OpenCV's round trip) instead of augment_hsv_strips; same bytes wherever rows are a multiple of 32 wide,
  // as training images are (hsv.h).
  bool fused_hsv = true;
  // Ultralytics' letterbox geometry (use_ultralytics_geometry) and hue shift (hsv.h) for its models;
  // YOLOv5's otherwise.
  bool ultralytics = false;
};

// Training __getitem__: with probability hyp.mosaic a mosaic (4 tiles) + random perspective (+ mixup with
// probability hyp.mixup), else letterbox to shape (auto=false, scaleup=true) + random perspective; then HSV,
// flip up-down, flip left-right. Output is img_size x img_size (mosaic) or shape_h x shape_w.
void make_train_sample(const ImageSource& source, size_t index, size_t dataset_size, const Hyp& hyp, int img_size,
                       int shape_h, int shape_w, bool use_mosaic, SampleRng& rng, Sample& out,
                       const SampleOptions& options = {});

// Validation / rect __getitem__: letterbox to (shape_h, shape_w), auto=false, scaleup=false, no augmentation.
// info gets YOLOv5's shapes entry: original size, load_image ratio (h/h0, w/w0) and the letterbox pad
// (or Ultralytics' ratio_pad, with options.ultralytics).
void make_letterbox_sample(const ImageLoader& load, size_t index, int shape_h, int shape_w, Sample& out,
                           const SampleOptions& options = {});

}  // namespace kestrel
