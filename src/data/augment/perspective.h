// YOLOv5's random_perspective (utils/augmentations.py) and box_candidates: the affine/perspective
// training warp of an image and its pixel-xyxy labels; with PerspectiveParams::float32, Ultralytics'
// RandomPerspective (data/augment.py), the same draws and steps in float32. The random draws are an explicit struct so that
// tests can inject the values YOLOv5 recorded; draw_perspective makes them from a SampleRng in YOLOv5's
// order (all 8, even those whose range is 0).
#pragma once
#include <algorithm>
#include <opencv2/core.hpp>
#include <vector>

#include "core/hyp.h"
#include "data/augment/rng.h"

namespace kestrel {

// A label in pixel corner form (YOLOv5's `targets` rows: class, x1, y1, x2, y2), float32 like YOLOv5's.
struct BoxLabel {
  float cls = 0, x1 = 0, y1 = 0, x2 = 0, y2 = 0;
};

struct PerspectiveParams {
  double degrees = 0, translate = 0.1, scale = 0.5, shear = 0, perspective = 0;
  // Ultralytics: the five matrices and their product, the box corners, the clip and box_candidates
  // in float32 (YOLOv5: float64). The warps differ by 1 in about 0.3% of the pixels.
  bool float32 = false;
  static PerspectiveParams from(const Hyp& hyp, bool float32 = false) {
    return {hyp.degrees, hyp.translate, hyp.scale, hyp.shear, hyp.perspective, float32};
  }
};

// The 8 uniform draws of random_perspective, in YOLOv5's call order.
struct PerspectiveDraws {
  double p20 = 0, p21 = 0;          // P[2,0], P[2,1] in +-perspective
  double angle = 0, scale = 1;      // degrees in +-degrees; scale in [1-scale, 1+scale]
  double shear_x = 0, shear_y = 0;  // degrees in +-shear
  double tx = 0.5, ty = 0.5;        // fractions of the output size in [0.5-translate, 0.5+translate]
};

PerspectiveDraws draw_perspective(SampleRng& rng, const PerspectiveParams& p);

// The factors of M = T * S * R * P * C. C centres the input (input size), T translates by fractions of
// the output size. float32: each factor rounded to float32 and multiplied in float32.
struct PerspectiveMatrices {
  cv::Matx33d C, P, R, S, T, M;
};
PerspectiveMatrices perspective_matrices(const PerspectiveDraws& d, int in_w, int in_h, int out_w, int out_h,
                                         bool float32 = false);

// What random_perspective did, for tests: matrices, every box after transform + clip (x1,y1,x2,y2 per
// input row, float64) and the input rows kept.
struct PerspectiveTrace {
  PerspectiveMatrices matrices;
  std::vector<double> boxes;
  std::vector<int> kept;
};

// Transforms the corners of each box by M (dividing by w when p.perspective), takes their min/max,
// clips to [0,out_w] x [0,out_h] (inclusive) and keeps the rows that pass box_candidates against the
// input box scaled by `scale`. Kept rows get the new corners (double rounded once to float32, or
// float32 throughout with p.float32).
void transform_labels(std::vector<BoxLabel>& labels, const cv::Matx33d& M, const PerspectiveParams& p, double scale,
                      int out_w, int out_h, PerspectiveTrace* trace = nullptr);

// Full random_perspective: out = warp of img (warpPerspective when p.perspective != 0, else warpAffine;
// linear, border 114) of size out_w x out_h (YOLOv5: the input's plus twice its `border`; Ultralytics:
// its `size`); labels transformed as above. The warp is skipped (out = copy of img) only when the sizes
// agree and M is exactly the identity.
void random_perspective(const cv::Mat& img, std::vector<BoxLabel>& labels, const PerspectiveParams& p,
                        const PerspectiveDraws& d, int out_w, int out_h, cv::Mat& out, PerspectiveTrace* trace = nullptr);

// YOLOv5's box_candidates for one box pair: w2 > wh_thr, h2 > wh_thr, w2*h2 / (w1*h1 + eps) > area_thr and
// max(w2/(h2+eps), h2/(w2+eps)) < ar_thr, all strict. box1's width, height and area are computed in its
// own type T (float32 labels inside random_perspective, float64 in the reference file), the rest in
// box2's type U (double in YOLOv5; float in Ultralytics, where numpy 2 keeps float32 with Python scalars).
template <class T, class U>
bool box_candidate(const T box1[4], const U box2[4], double wh_thr = 2, double ar_thr = 100, double area_thr = 0.1,
                   double eps = 1e-16) {
  const T w1 = box1[2] - box1[0], h1 = box1[3] - box1[1];
  const T area1 = w1 * h1 + static_cast<T>(eps);
  const U w2 = box2[2] - box2[0], h2 = box2[3] - box2[1], e = static_cast<U>(eps);
  const U ar = std::max(w2 / (h2 + e), h2 / (w2 + e));
  return w2 > static_cast<U>(wh_thr) && h2 > static_cast<U>(wh_thr) &&
         w2 * h2 / static_cast<U>(area1) > static_cast<U>(area_thr) && ar < static_cast<U>(ar_thr);
}

}  // namespace kestrel
