// An affine warp of a canvas that is never built: the canvas is up to four image pieces on grey (114),
// one per quadrant around a split point (the layout of a YOLOv5 mosaic, or one letterboxed image). The
// result is bit-identical to cv::warpAffine(canvas, M, INTER_LINEAR, BORDER_CONSTANT 114) on the composed
// canvas, optionally flipped, because it computes OpenCV's own fixed-point source coordinates and
// resamples each block of the output with cv::remap straight from the piece it reads.
#pragma once
#include <opencv2/core.hpp>

namespace kestrel {

struct PieceCanvas {
  // Quadrant q (0 top-left, 1 top-right, 2 bottom-left, 3 bottom-right) is x < split_x / x >= split_x and
  // y < split_y / y >= split_y. Piece q must lie inside quadrant q; outside all pieces the canvas is 114.
  int split_x = 1 << 20, split_y = 1 << 20;
  cv::Mat piece[4];            // BGR uint8 views (may be empty)
  int x0[4] = {}, y0[4] = {};  // canvas position of each piece's top-left pixel
};

// out (out_h x out_w BGR) = warpAffine of the canvas with the forward 2x3 matrix M; with flip_lr/flip_ud the
// output is mirrored as np.fliplr/np.flipud would afterwards (folded into the sampling, no extra pass).
void warp_affine_pieces(const PieceCanvas& canvas, const cv::Matx23d& M, int out_w, int out_h, bool flip_lr,
                        bool flip_ud, cv::Mat& out);

}  // namespace kestrel
