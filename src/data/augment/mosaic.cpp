// load_mosaic: layout, labels, the reference canvas path and the canvas-free direct path.
#include "data/augment/mosaic.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>
#include <utility>

#include "data/augment/augment.h"
#include "data/augment/warp_pieces.h"

namespace kestrel {

std::array<TilePlacement, 4> mosaic_layout(int s, int xc, int yc, const std::array<cv::Size, 4>& tile_sizes) {
  std::array<TilePlacement, 4> t;
  for (int k = 0; k < 4; ++k) {
    const int w = tile_sizes[k].width, h = tile_sizes[k].height;
    TilePlacement& p = t[k];
    const bool right = k & 1, bottom = k & 2;
    // Canvas region: from the centre outwards, cut at the canvas edge.
    p.x1a = right ? xc : std::max(xc - w, 0);
    p.x2a = right ? std::min(xc + w, 2 * s) : xc;
    p.y1a = bottom ? yc : std::max(yc - h, 0);
    p.y2a = bottom ? std::min(2 * s, yc + h) : yc;
    // Tile region of the same size, on the side that faces the centre.
    p.x1b = right ? 0 : w - (p.x2a - p.x1a);
    p.x2b = right ? std::min(w, p.x2a - p.x1a) : w;
    p.y1b = bottom ? 0 : h - (p.y2a - p.y1a);
    p.y2b = bottom ? std::min(p.y2a - p.y1a, h) : h;
  }
  return t;
}

MosaicDraws draw_mosaic(SampleRng& rng, size_t index, size_t dataset_size, int s, const PerspectiveParams& p) {
  MosaicDraws d;
  const int b = mosaic_border(s);
  d.yc = static_cast<int>(rng.uniform(-b, 2 * s + b));  // values are positive: int() truncates
  d.xc = static_cast<int>(rng.uniform(-b, 2 * s + b));
  d.indices[0] = index;
  for (int k = 1; k < 4; ++k) d.indices[k] = rng.below(dataset_size);
  for (int i = 3; i > 0; --i) std::swap(d.indices[i], d.indices[rng.below(i + 1)]);  // random.shuffle's order
  d.perspective = draw_perspective(rng, p);
  return d;
}

std::array<cv::Rect, 4> mosaic_tile_regions(const MosaicDraws& d, int s, const std::array<cv::Size, 4>& tile_sizes) {
  const auto layout = mosaic_layout(s, d.xc, d.yc, tile_sizes);
  const int out_size = mosaic_size(s);
  const cv::Matx33d M = perspective_matrices(d.perspective, 2 * s, 2 * s, out_size, out_size).M;
  cv::Matx23d inverse;
  cv::invertAffineTransform(cv::Matx23d(M(0, 0), M(0, 1), M(0, 2), M(1, 0), M(1, 1), M(1, 2)), inverse);
  double lo[2] = {1e300, 1e300}, hi[2] = {-1e300, -1e300};
  for (const double y : {0.0, out_size - 1.0})
    for (const double x : {0.0, out_size - 1.0})
      for (int k = 0; k < 2; ++k) {
        const double v = inverse(k, 0) * x + inverse(k, 1) * y + inverse(k, 2);
        lo[k] = std::min(lo[k], v), hi[k] = std::max(hi[k], v);
      }
  const auto bound = [](double v) { return static_cast<int>(std::clamp(std::floor(v), -1e8, 1e8)); };
  const cv::Rect seen(cv::Point(bound(lo[0]) - 2, bound(lo[1]) - 2), cv::Point(bound(hi[0]) + 4, bound(hi[1]) + 4));
  std::array<cv::Rect, 4> regions;
  for (int k = 0; k < 4; ++k) {
    const TilePlacement& t = layout[k];
    const cv::Rect part = seen & cv::Rect(cv::Point(t.x1a, t.y1a), cv::Point(t.x2a, t.y2a));
    if (!part.empty()) regions[k] = part - cv::Point(t.padw(), t.padh());
  }
  return regions;
}

void mosaic_labels(const std::array<MosaicTile, 4>& tiles, const std::array<TilePlacement, 4>& layout, int s,
                   std::vector<BoxLabel>& out) {
  out.clear();
  for (int k = 0; k < 4; ++k) {
    if (!tiles[k].labels) continue;
    xywhn_to_xyxy(*tiles[k].labels, float(tiles[k].image.cols), float(tiles[k].image.rows),
                  float(layout[k].padw()), float(layout[k].padh()), out);
  }
  const float hi = float(2 * s);
  for (BoxLabel& b : out) {
    b.x1 = std::min(std::max(b.x1, 0.f), hi);
    b.y1 = std::min(std::max(b.y1, 0.f), hi);
    b.x2 = std::min(std::max(b.x2, 0.f), hi);
    b.y2 = std::min(std::max(b.y2, 0.f), hi);
  }
}

void mosaic_canvas(const std::array<MosaicTile, 4>& tiles, const std::array<TilePlacement, 4>& layout, int s,
                   cv::Mat& canvas) {
  canvas.create(2 * s, 2 * s, CV_8UC3);
  canvas.setTo(cv::Scalar::all(114));
  for (int k = 0; k < 4; ++k) {
    const TilePlacement& p = layout[k];
    tiles[k].image(cv::Rect(p.x1b, p.y1b, p.x2b - p.x1b, p.y2b - p.y1b))
        .copyTo(canvas(cv::Rect(p.x1a, p.y1a, p.x2a - p.x1a, p.y2a - p.y1a)));
  }
}

namespace {

std::array<TilePlacement, 4> layout_of(const std::array<MosaicTile, 4>& tiles, const MosaicDraws& d, int s) {
  std::array<cv::Size, 4> sizes;
  for (int k = 0; k < 4; ++k) sizes[k] = tiles[k].image.size();
  return mosaic_layout(s, d.xc, d.yc, sizes);
}

}  // namespace

void mosaic_on_canvas(const std::array<MosaicTile, 4>& tiles, const MosaicDraws& d, int s, const PerspectiveParams& p,
                  cv::Mat& out, std::vector<BoxLabel>& labels, PerspectiveTrace* trace) {
  const auto layout = layout_of(tiles, d, s);
  mosaic_labels(tiles, layout, s, labels);
  thread_local cv::Mat canvas;
  mosaic_canvas(tiles, layout, s, canvas);
  const int out_size = mosaic_size(s);
  random_perspective(canvas, labels, p, d.perspective, out_size, out_size, out, trace);
}

void mosaic_direct(const std::array<MosaicTile, 4>& tiles, const MosaicDraws& d, int s, const PerspectiveParams& p,
                 bool flip_lr, bool flip_ud, cv::Mat& out, std::vector<BoxLabel>& labels) {
  if (p.perspective != 0) {
    mosaic_on_canvas(tiles, d, s, p, out, labels);
    if (flip_lr || flip_ud) cv::flip(out, out, flip_lr && flip_ud ? -1 : (flip_lr ? 1 : 0));
    return;
  }
  const auto layout = layout_of(tiles, d, s);
  mosaic_labels(tiles, layout, s, labels);
  const int out_size = mosaic_size(s);
  const PerspectiveMatrices m = perspective_matrices(d.perspective, 2 * s, 2 * s, out_size, out_size, p.float32);
  PieceCanvas canvas;
  canvas.split_x = d.xc;
  canvas.split_y = d.yc;
  for (int k = 0; k < 4; ++k) {
    const TilePlacement& t = layout[k];
    canvas.piece[k] = tiles[k].image(cv::Rect(t.x1b, t.y1b, t.x2b - t.x1b, t.y2b - t.y1b));
    canvas.x0[k] = t.x1a;
    canvas.y0[k] = t.y1a;
  }
  const cv::Matx23d M(m.M(0, 0), m.M(0, 1), m.M(0, 2), m.M(1, 0), m.M(1, 1), m.M(1, 2));
  warp_affine_pieces(canvas, M, out_size, out_size, flip_lr, flip_ud, out);
  transform_labels(labels, m.M, p, d.perspective.scale, out_size, out_size);
}

}  // namespace kestrel
