// YOLOv5's load_mosaic (utils/dataloaders.py): four images around a random centre on a 2s x 2s grey canvas,
// then random_perspective with border -s/2, which crops the canvas to s x s. Two implementations with the
// same draws and identical bytes: the reference one fills the canvas and warps it; the direct one warps
// the s x s output straight from the four tiles (warp_affine_pieces), never building the canvas, and can
// fold the later flips into the same pass. With no rotation or shear (YOLOv5's default) the direct warp is
// separable and about 2.5x faster at img 640 (see sample.h).
#pragma once
#include <array>
#include <opencv2/core.hpp>
#include <vector>

#include "data/augment/perspective.h"
#include "data/augment/rng.h"
#include "data/types.h"

namespace kestrel {

// YOLOv5's mosaic_border, -img_size // 2 in Python (floor division): -s/2 for the usual even s.
inline int mosaic_border(int s) { return -((s + 1) / 2); }
// The mosaic's output side: the 2s canvas cropped by the border on each side (s for an even s).
inline int mosaic_size(int s) { return 2 * s + 2 * mosaic_border(s); }

// Half-open regions: tile pixels [x1b,x2b) x [y1b,y2b) go to canvas [x1a,x2a) x [y1a,y2a).
struct TilePlacement {
  int x1a = 0, y1a = 0, x2a = 0, y2a = 0, x1b = 0, y1b = 0, x2b = 0, y2b = 0;
  int padw() const { return x1a - x1b; }
  int padh() const { return y1a - y1b; }
};

// Tile k (0 top-left, 1 top-right, 2 bottom-left, 3 bottom-right) touches the centre (xc, yc) with its
// inner corner and is cut only at the canvas edge.
std::array<TilePlacement, 4> mosaic_layout(int s, int xc, int yc, const std::array<cv::Size, 4>& tile_sizes);

// The random choices of one mosaic, in YOLOv5's draw order: yc, xc = int(uniform(-b, 2s + b)) with
// b = mosaic_border(s), i.e. uniform(s/2, 3s/2); three more
// dataset indices drawn with replacement (may repeat `index`); a shuffle of the four; the 8 perspective draws.
struct MosaicDraws {
  int yc = 0, xc = 0;
  std::array<size_t, 4> indices{};  // tile order, after the shuffle
  PerspectiveDraws perspective;
};
MosaicDraws draw_mosaic(SampleRng& rng, size_t index, size_t dataset_size, int s, const PerspectiveParams& p);

// The part of each tile (in tile pixels) the warp of this mosaic reads, from the tile sizes alone, so a
// loader can decode just that: the preimage of the output square under the affine M, widened by two
// pixels for the bilinear footprint and the fixed-point rounding, cut to the tile's placement. Empty for
// a tile the output does not see. Only for an affine warp (p.perspective == 0).
std::array<cv::Rect, 4> mosaic_tile_regions(const MosaicDraws& d, int s, const std::array<cv::Size, 4>& tile_sizes);

// One tile: the image as load_image returned it (long side s) and its normalized labels.
struct MosaicTile {
  cv::Mat image;
  const std::vector<Label>* labels = nullptr;
};

// The tiles' labels in canvas pixels (float32, tile order), clipped to [0, 2s].
void mosaic_labels(const std::array<MosaicTile, 4>& tiles, const std::array<TilePlacement, 4>& layout, int s,
                   std::vector<BoxLabel>& out);
// The 2s x 2s canvas (grey 114 where no tile lies).
void mosaic_canvas(const std::array<MosaicTile, 4>& tiles, const std::array<TilePlacement, 4>& layout, int s,
                   cv::Mat& canvas);

// Reference path: canvas, labels, random_perspective(border mosaic_border(s)). out is s x s; labels are the kept
// boxes in output pixels.
void mosaic_on_canvas(const std::array<MosaicTile, 4>& tiles, const MosaicDraws& d, int s, const PerspectiveParams& p,
                  cv::Mat& out, std::vector<BoxLabel>& labels, PerspectiveTrace* trace = nullptr);

// Direct path: the same image and labels. flip_lr/flip_ud mirror the image only (as np.fliplr/np.flipud
// would afterwards); labels stay unflipped because YOLOv5 flips them after normalization, which the caller
// does. With p.perspective != 0 (a projective warp) it runs the reference path and flips after it.
void mosaic_direct(const std::array<MosaicTile, 4>& tiles, const MosaicDraws& d, int s, const PerspectiveParams& p,
                 bool flip_lr, bool flip_ud, cv::Mat& out, std::vector<BoxLabel>& labels);

}  // namespace kestrel
