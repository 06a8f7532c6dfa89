// warp_affine_pieces against cv::warpAffine on the composed canvas: random quadrant layouts, rotations,
// zooms, shears and far-off translations (coordinates saturating OpenCV's 16-bit maps), with and without
// flips, and the axis-aligned zoom-and-shift case. Every byte must match.
#include <opencv2/imgproc.hpp>

#include "data/augment/warp_pieces.h"
#include "test_support.h"

namespace kestrel {
namespace {

TEST(WarpPieces, MatchesWarpAffineOnTheComposedCanvas) {
  cv::RNG rng(2024);
  for (int trial = 0; trial < 120; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const int cw = rng.uniform(40, 200), ch = rng.uniform(40, 200);
    PieceCanvas pc;
    pc.split_x = rng.uniform(1, cw);
    pc.split_y = rng.uniform(1, ch);
    cv::Mat canvas(ch, cw, CV_8UC3, cv::Scalar::all(114));
    std::vector<cv::Mat> keep;
    for (int q = 0; q < 4; ++q) {
      const int qx0 = q & 1 ? pc.split_x : 0, qx1 = q & 1 ? cw : pc.split_x;
      const int qy0 = q & 2 ? pc.split_y : 0, qy1 = q & 2 ? ch : pc.split_y;
      if (rng.uniform(0, 6) == 0) continue;  // an empty quadrant now and then
      const int x0 = rng.uniform(qx0, qx1), y0 = rng.uniform(qy0, qy1);
      const int w = rng.uniform(1, qx1 - x0 + 1), h = rng.uniform(1, qy1 - y0 + 1);
      cv::Mat piece(h, w, CV_8UC3);
      rng.fill(piece, cv::RNG::UNIFORM, 0, 256);
      keep.push_back(piece);
      pc.piece[q] = piece;
      pc.x0[q] = x0;
      pc.y0[q] = y0;
      piece.copyTo(canvas(cv::Rect(x0, y0, w, h)));
    }
    // Every other trial is axis-aligned (zoom and shift only, YOLOv5's default), which has its own path.
    const bool axis_aligned = trial % 2 == 1;
    const double angle = axis_aligned ? 0 : rng.uniform(-180.0, 180.0), scale = rng.uniform(0.3, 3.0);
    cv::Mat m = cv::getRotationMatrix2D(cv::Point2f(cw / 2.f, ch / 2.f), angle, scale);
    if (!axis_aligned) m.at<double>(0, 1) += rng.uniform(-0.3, 0.3);
    const bool far = trial % 10 == 9;
    m.at<double>(0, 2) += far ? 40000 : rng.uniform(-50.0, 50.0);
    m.at<double>(1, 2) += rng.uniform(-50.0, 50.0);
    const int ow = rng.uniform(10, 300), oh = rng.uniform(10, 300);
    cv::Mat want;
    cv::warpAffine(canvas, want, m, cv::Size(ow, oh), cv::INTER_LINEAR, cv::BORDER_CONSTANT, cv::Scalar::all(114));
    for (int flips = 0; flips < 4; ++flips) {
      cv::Mat got, expected = want.clone();
      warp_affine_pieces(pc, cv::Matx23d(m.ptr<double>()), ow, oh, flips & 1, flips & 2, got);
      if (flips & 1) cv::flip(expected, expected, 1);
      if (flips & 2) cv::flip(expected, expected, 0);
      ASSERT_EQ(cv::norm(got, expected, cv::NORM_INF), 0) << "flips " << flips;
    }
  }
}

}  // namespace
}  // namespace kestrel
