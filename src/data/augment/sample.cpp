// make_train_sample / make_letterbox_sample.
//
// Draw order of a training sample (one SampleRng): mosaic test (only when mosaic is enabled); then either
// the mosaic's draws (centre, 3 indices, shuffle, 8 perspective draws) followed by the mixup test and,
// when it fires, the second mosaic's index, its draws and the mixup ratio; or, without mosaic, the 8
// perspective draws. Then the HSV gains (none when all hyp gains are 0), flip up-down, flip left-right.
// This is YOLOv5's order; every draw is made up front, so the direct path can fold the flips into the warp.
#include "data/augment/sample.h"

#include "data/augment/augment.h"
#include "data/augment/hsv.h"
#include "data/augment/letterbox.h"
#include "data/augment/mosaic.h"
#include "data/augment/perspective.h"
#include "data/loader/stage_timer.h"
#include "data/augment/warp_pieces.h"

namespace kestrel {
namespace {

struct TrainDraws {
  bool mosaic = false, mixup = false;
  MosaicDraws first, second;  // second: mixup's mosaic
  double mixup_ratio = 0;
  PerspectiveDraws perspective;  // letterbox path
  HsvGains hsv;
  bool flip_ud = false, flip_lr = false;
};

TrainDraws draw_train(SampleRng& rng, size_t index, size_t n, const Hyp& hyp, int s, bool use_mosaic, bool ultralytics) {
  const PerspectiveParams p = PerspectiveParams::from(hyp);
  TrainDraws d;
  d.mosaic = use_mosaic && rng.random() < hyp.mosaic;
  if (d.mosaic) {
    d.first = draw_mosaic(rng, index, n, s, p);
    d.mixup = rng.random() < hyp.mixup;
    if (d.mixup) {
      d.second = draw_mosaic(rng, rng.below(n), n, s, p);
      d.mixup_ratio = draw_mixup_ratio(rng);
    }
  } else {
    d.perspective = draw_perspective(rng, p);
  }
  d.hsv = draw_hsv_gains(rng, hyp, /*shift_hue=*/ultralytics);
  d.flip_ud = rng.random() < hyp.flipud;
  d.flip_lr = rng.random() < hyp.fliplr;
  return d;
}

// Loads the four tiles of a mosaic; `keep` holds the LoadedImages so the tile Mats stay valid. When the
// tile sizes are known up front (and the warp is affine) each tile is loaded with the region the warp reads.
std::array<MosaicTile, 4> load_tiles(const ImageSource& source, const MosaicDraws& d, const PerspectiveParams& p,
                                     int s, std::array<LoadedImage, 4>& keep) {
  std::array<cv::Size, 4> sizes;
  bool known = source.loaded_size && p.perspective == 0;
  for (int k = 0; k < 4 && known; ++k) {
    sizes[k] = source.loaded_size(d.indices[k]);
    known = !sizes[k].empty();
  }
  std::array<DecodeRegion, 4> regions;
  if (known) {
    const std::array<cv::Rect, 4> rects = mosaic_tile_regions(d, s, sizes);
    for (int k = 0; k < 4; ++k) regions[k] = {rects[k], sizes[k]};
  }
  std::array<MosaicTile, 4> tiles;
  for (int k = 0; k < 4; ++k) {
    keep[k] = source.load(d.indices[k], known ? &regions[k] : nullptr);
    tiles[k] = {keep[k].bgr, keep[k].labels};
  }
  return tiles;
}

// A mosaic (plus the mixup mosaic when drawn) into img / boxes. With `direct` the flips are folded
// into the warp; otherwise the image is left unflipped.
void build_mosaic(const ImageSource& source, const TrainDraws& d, const PerspectiveParams& p, int s, bool direct,
                  cv::Mat& img, std::vector<BoxLabel>& boxes) {
  std::array<LoadedImage, 4> keep;
  const auto run = [&](const MosaicDraws& md, cv::Mat& dst, std::vector<BoxLabel>& dst_boxes) {
    const auto tiles = load_tiles(source, md, p, s, keep);
    if (direct)
      mosaic_direct(tiles, md, s, p, d.flip_lr, d.flip_ud, dst, dst_boxes);
    else
      mosaic_on_canvas(tiles, md, s, p, dst, dst_boxes);
  };
  run(d.first, img, boxes);
  if (!d.mixup) return;
  thread_local cv::Mat img2;
  thread_local std::vector<BoxLabel> boxes2;
  run(d.second, img2, boxes2);
  mixup_images(img, img2, d.mixup_ratio);
  boxes.insert(boxes.end(), boxes2.begin(), boxes2.end());
}

// A loaded image letterboxed into `out`, its labels into `boxes` (xyxy, pixels of `out`); returns the
// shapes entry: original size, load_image ratio and the pad, in the family's geometry.
LetterboxInfo letterbox_loaded(const LoadedImage& li, int shape_h, int shape_w, bool scaleup, bool ultralytics,
                               cv::Mat& out, std::vector<BoxLabel>& boxes) {
  LetterboxInfo lb;
  letterbox(li.bgr, shape_h, shape_w, false, scaleup, out, &lb);
  if (ultralytics) use_ultralytics_geometry(lb);
  boxes.clear();
  if (li.labels)
    xywhn_to_xyxy(*li.labels, float(lb.ratio_w * li.bgr.cols), float(lb.ratio_h * li.bgr.rows), float(lb.pad_w),
                  float(lb.pad_h), boxes);
  lb.orig_h = li.orig_h, lb.orig_w = li.orig_w;
  lb.ratio_h = double(li.bgr.rows) / li.orig_h, lb.ratio_w = double(li.bgr.cols) / li.orig_w;
  return lb;
}

// A sample without mosaic into img / boxes (shape_h x shape_w). YOLOv5 letterboxes the loaded image, then
// warps it at its own size (`info` gets its shapes entry); Ultralytics' warp places the loaded image
// itself, centred by the translation (no shapes entry, as for a mosaic). The two differ by half a
// pixel where the padding is odd.
void build_letterboxed(const ImageLoader& load, size_t index, const TrainDraws& d, const PerspectiveParams& p,
                       int shape_h, int shape_w, const SampleOptions& options, cv::Mat& img, std::vector<BoxLabel>& boxes,
                       LetterboxInfo& info) {
  const bool direct = options.direct_warp;
  thread_local cv::Mat boxed;
  const LoadedImage loaded = load(index, nullptr);
  cv::Mat source;  // what the warp reads
  if (options.ultralytics) {
    source = loaded.bgr;
    boxes.clear();
    if (loaded.labels) xywhn_to_xyxy(*loaded.labels, float(source.cols), float(source.rows), 0, 0, boxes);
    info = LetterboxInfo{};
  } else {
    info = letterbox_loaded(loaded, shape_h, shape_w, true, false, boxed, boxes);
    source = boxed;
  }
  if (direct && p.perspective == 0) {
    const PerspectiveMatrices m = perspective_matrices(d.perspective, source.cols, source.rows, shape_w, shape_h, p.float32);
    PieceCanvas canvas;
    canvas.piece[0] = source;
    warp_affine_pieces(canvas, cv::Matx23d(m.M.val), shape_w, shape_h, d.flip_lr, d.flip_ud, img);
    transform_labels(boxes, m.M, p, d.perspective.scale, shape_w, shape_h);
    return;
  }
  random_perspective(source, boxes, p, d.perspective, shape_w, shape_h, img);
  if (direct && (d.flip_lr || d.flip_ud)) cv::flip(img, img, d.flip_lr && d.flip_ud ? -1 : (d.flip_lr ? 1 : 0));
}

}  // namespace

void make_train_sample(const ImageSource& source, size_t index, size_t dataset_size, const Hyp& hyp, int img_size,
                       int shape_h, int shape_w, bool use_mosaic, SampleRng& rng, Sample& out,
                       const SampleOptions& options) {
  const TrainDraws d = draw_train(rng, index, dataset_size, hyp, img_size, use_mosaic, options.ultralytics);
  const PerspectiveParams p = PerspectiveParams::from(hyp, /*float32=*/options.ultralytics);
  const bool direct = options.direct_warp;
  thread_local std::vector<BoxLabel> boxes;
  if (d.mosaic) {
    build_mosaic(source, d, p, img_size, direct, out.bgr, boxes);
    out.info = LetterboxInfo{};  // YOLOv5's shapes is None for a mosaic
  } else {
    build_letterboxed(source.load, index, d, p, shape_h, shape_w, options, out.bgr, boxes, out.info);
  }
  if (options.ultralytics)
    xyxy_to_xywhn_flipped(boxes, out.bgr.cols, out.bgr.rows, d.flip_lr, d.flip_ud, out.labels);
  else
    xyxy_to_xywhn(boxes, out.bgr.cols, out.bgr.rows, out.labels);
  ScopedStage colour_timer(Stage::colour);
  if (!direct)
    augment_hsv(out.bgr, d.hsv);
  else if (options.fused_hsv)
    augment_hsv_fast(out.bgr, d.hsv);  // per pixel, so before or after the flips alike
  else
    augment_hsv_strips(out.bgr, d.hsv);
  if (!direct) {
    if (d.flip_ud) cv::flip(out.bgr, out.bgr, 0);
    if (d.flip_lr) cv::flip(out.bgr, out.bgr, 1);
  }
  if (options.ultralytics) return;  // flipped with the conversion
  if (d.flip_ud) flip_labels_ud(out.labels);
  if (d.flip_lr) flip_labels_lr(out.labels);
}

void make_letterbox_sample(const ImageLoader& load, size_t index, int shape_h, int shape_w, Sample& out,
                           const SampleOptions& options) {
  thread_local std::vector<BoxLabel> boxes;
  out.info = letterbox_loaded(load(index, nullptr), shape_h, shape_w, false, options.ultralytics, out.bgr, boxes);
  xyxy_to_xywhn(boxes, out.bgr.cols, out.bgr.rows, out.labels);
}

}  // namespace kestrel
