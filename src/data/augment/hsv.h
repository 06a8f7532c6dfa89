// YOLOv5's augment_hsv (utils/augmentations.py) and Ultralytics' RandomHSV (data/augment.py, which
// shifts the hue where YOLOv5 scales it): random hue/saturation/value gains applied through three
// 256-entry lookup tables in OpenCV's 8-bit HSV space (cv::cvtColor both ways, so the lossy round trip
// is OpenCV's exactly), and a fused AVX2 kernel that computes the same bytes in one pass.
#pragma once
#include <array>
#include <opencv2/core.hpp>

#include "core/hyp.h"
#include "data/augment/rng.h"

namespace kestrel {

// Gains r = u * (hgain, sgain, vgain) + 1 (float64). `active` is false when all three hyp gains are 0:
// YOLOv5 and Ultralytics then make no draw and leave the image untouched. With shift_hue (Ultralytics
// since 8.3.79) the hue moves by hue_shift = u0 * hgain * 180 instead of being scaled by r[0].
struct HsvGains {
  bool active = false;
  double r[3] = {1, 1, 1};
  bool shift_hue = false;
  double hue_shift = 0;
};
HsvGains hsv_gains_from_u(const double u[3], double hgain, double sgain, double vgain, bool shift_hue = false);
// Draws u = 3 x uniform(-1, 1) (only when a gain is non-zero).
HsvGains draw_hsv_gains(SampleRng& rng, const Hyp& hyp, bool shift_hue = false);

// The hue, saturation and value tables: (x*r0) mod 180 (or (x + hue_shift) mod 180, numpy's floored
// mod), clip(x*r1, 0, 255), clip(x*r2, 0, 255), truncated.
struct HsvLuts {
  std::array<uint8_t, 256> hue, sat, val;
};
HsvLuts hsv_luts(const HsvGains& gains);

// In place on a BGR uint8 image: BGR->HSV, tables, HSV->BGR, over the whole image at once (the
// reference formulation).
void augment_hsv(cv::Mat& bgr, const HsvGains& gains);
// The same result, computed in strips of a few rows so the HSV intermediate stays in cache and nothing
// is allocated per call (cv::cvtColor is per pixel, so strips give identical bytes).
void augment_hsv_strips(cv::Mat& bgr, const HsvGains& gains);

// The fast path: BGR->HSV, the gains and HSV->BGR fused into one pass, 8 pixels at a time in AVX2 (no
// intermediate image, no table lookups). It recomputes what OpenCV 4.6's vector loops compute: the 8-bit
// forward conversion in integers with its fixed-point reciprocal tables (derived by float division, which
// rounds to the same entries), YOLOv5's float64 gain tables as float64 arithmetic, and the float backward
// conversion with the same operations (FMA-contracted as OpenCV's build is) and final truncation. Measured
// over every colour on a step-3 grid under five gain sets, 0 of 1.9M values differ from cv::cvtColor
// (tests/data/test_augment_hsv.cpp); OpenCV's scalar tail for the last pixels of a row that is not a
// multiple of 32 wide rounds instead of truncating, so there a value can differ by 1. The gain tables
// run in float32 when that truncates to the same 256 integers (checked per call), and 8-pixel blocks of
// the mosaic's grey border take a precomputed result. About 0.6x the time of the exact path on photos,
// less on mosaics. Without AVX2, or with a hue gain of 2 or more, it runs the exact path.
void augment_hsv_fast(cv::Mat& bgr, const HsvGains& gains);
// True when augment_hsv_fast has its AVX2 (+FMA) kernel on this CPU.
bool hsv_fast_kernel_available();

}  // namespace kestrel
