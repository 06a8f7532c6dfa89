// augment_hsv against YOLOv5's recorded gains, tables and pixels (augment_hsv.json): exact with OpenCV 4.6;
// with the hue shifted, against Ultralytics' RandomHSV on the same images (ultralytics/augment_hsv.json).
// The fused kernel (augment_hsv_fast) against the exact path: over every colour on a grid and YOLOv5's
// recorded cases, with the number of differing values printed and bounded.
#include <opencv2/imgproc.hpp>

#include <cmath>
#include <cstdio>
#include <initializer_list>

#include "data/augment/hsv.h"
#include "pixel_summary.h"
#include "test_support.h"

namespace kestrel {
namespace {

using test::json_image;

const nlohmann::json& ref() { return test::reference("augment_hsv.json"); }

cv::Mat image_input(const std::string& name) { return json_image(ref().at("inputs").at(name)); }

HsvGains case_gains(const nlohmann::json& c) {
  const auto g = c.at("hgain_sgain_vgain").get<std::vector<double>>();
  double u[3] = {0, 0, 0};
  if (!c.at("u").is_null())
    for (int i = 0; i < 3; ++i) u[i] = c.at("u")[i].get<double>();
  return hsv_gains_from_u(u, g[0], g[1], g[2]);
}

TEST(AugmentHsv, Sha256HelperMatchesKnownDigest) {
  const uint8_t abc[] = {'a', 'b', 'c'};
  EXPECT_EQ(test::sha256_hex(abc, 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(AugmentHsv, GainsAndTablesMatchYolov5) {
  for (const auto& c : ref().at("cases")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const HsvGains g = case_gains(c);
    if (c.at("r").is_null()) {
      EXPECT_FALSE(g.active);
      continue;
    }
    ASSERT_TRUE(g.active);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(g.r[i], c.at("r")[i].get<double>()) << "r" << i;
    const HsvLuts luts = hsv_luts(g);
    const auto& l = c.at("luts");
    const auto hue = test::json_doubles(l.at("lut_hue")), sat = test::json_doubles(l.at("lut_sat")),
               val = test::json_doubles(l.at("lut_val"));
    for (int x = 0; x < 256; ++x) {
      EXPECT_EQ(luts.hue[x], hue[x]) << "hue " << x;
      EXPECT_EQ(luts.sat[x], sat[x]) << "sat " << x;
      EXPECT_EQ(luts.val[x], val[x]) << "val " << x;
    }
  }
}

TEST(AugmentHsv, PixelsMatchYolov5Exactly) {
  for (const auto& c : ref().at("cases")) {
    const std::string name = c.at("name");
    const HsvGains g = case_gains(c);
    for (const auto& [image_name, expected] : c.at("images").items()) {
      SCOPED_TRACE(name + " / " + image_name);
      const cv::Mat in = image_input(image_name);
      if (expected.contains("hsv_in")) {
        cv::Mat hsv;
        cv::cvtColor(in, hsv, cv::COLOR_BGR2HSV);
        EXPECT_EQ(cv::norm(hsv, json_image(expected.at("hsv_in")), cv::NORM_INF), 0) << "hsv_in";
      }
      const cv::Mat want = json_image(expected.at("out_bgr"));
      cv::Mat whole = in.clone(), strips = in.clone();
      augment_hsv(whole, g);
      augment_hsv_strips(strips, g);
      EXPECT_EQ(cv::norm(whole, want, cv::NORM_INF), 0) << "augment_hsv";
      EXPECT_EQ(cv::norm(strips, want, cv::NORM_INF), 0) << "augment_hsv_strips";
      cv::Mat fused = in.clone();
      augment_hsv_fast(fused, g);
      EXPECT_LE(cv::norm(fused, want, cv::NORM_INF), 1) << "augment_hsv_fast";
      if (expected.contains("changed_pixels")) {
        cv::Mat diff;
        cv::absdiff(whole, in, diff);
        cv::Mat any = diff.reshape(1, int(diff.total())) != 0;
        cv::reduce(any, any, 1, cv::REDUCE_MAX);
        EXPECT_EQ(cv::countNonZero(any), expected.at("changed_pixels").get<int>());
      }
    }
  }
}

// Ultralytics moves the hue by u0 x hgain x 180 (wrapping below 0 and above 179) where YOLOv5 scales
// it; the saturation and value tables are YOLOv5's.
TEST(AugmentHsv, ShiftedHuePixelsMatchUltralyticsExactly) {
  const nlohmann::json& ultralytics = test::reference("ultralytics/augment_hsv.json");
  for (const auto& c : ultralytics.at("cases")) {
    const std::string name = c.at("name");
    const auto gain = c.at("hgain_sgain_vgain").get<std::vector<double>>();
    const auto u = c.at("u").get<std::vector<double>>();
    const HsvGains g = hsv_gains_from_u(u.data(), gain[0], gain[1], gain[2], /*shift_hue=*/true);
    for (const auto& [image_name, expected] : c.at("images").items()) {
      SCOPED_TRACE(name + " / " + image_name);
      const cv::Mat in = image_input(image_name), want = json_image(expected);
      cv::Mat whole = in.clone(), strips = in.clone(), fused = in.clone();
      augment_hsv(whole, g);
      augment_hsv_strips(strips, g);
      augment_hsv_fast(fused, g);
      EXPECT_EQ(cv::norm(whole, want, cv::NORM_INF), 0) << "augment_hsv";
      EXPECT_EQ(cv::norm(strips, want, cv::NORM_INF), 0) << "augment_hsv_strips";
      EXPECT_LE(cv::norm(fused, want, cv::NORM_INF), 1) << "augment_hsv_fast";  // 16-wide rows: OpenCV's scalar tail
    }
  }
}

TEST(AugmentHsv, DrawsOnlyWithNonZeroGains) {
  Hyp hyp;
  SampleRng a(1, 2, 3), b(1, 2, 3);
  hyp.hsv_h = hyp.hsv_s = hyp.hsv_v = 0;
  EXPECT_FALSE(draw_hsv_gains(a, hyp).active);
  EXPECT_EQ(a.next_u64(), b.next_u64()) << "zero gains must not consume a draw";
  hyp.hsv_v = 0.4;
  const HsvGains g = draw_hsv_gains(a, hyp);
  EXPECT_TRUE(g.active);
  EXPECT_EQ(g.r[0], 1.0);
  EXPECT_EQ(g.r[1], 1.0);
  EXPECT_GE(g.r[2], 0.6);
  EXPECT_LT(g.r[2], 1.4);
}

// The fused kernel computes OpenCV's reciprocal tables round(n / d) by float division; that must round to
// the same integer for every divisor it meets (1..255) and both numerators.
TEST(AugmentHsvFast, FloatQuotientsReproduceOpenCvsReciprocalTables) {
  for (const int n : {255 << 12, 30 << 12})
    for (int d = 1; d < 256; ++d)
      EXPECT_EQ(std::lrintf(static_cast<float>(n) / static_cast<float>(d)), std::lrint(static_cast<double>(n) / d))
          << n << " / " << d;
}

// Every colour on a grid of step 3 (636056 pixels), under identity, weak, strong and extreme gains, the
// hue scaled and shifted.
TEST(AugmentHsvFast, AgreesWithOpenCvOnAlmostEveryValue) {
  if (!hsv_fast_kernel_available()) GTEST_SKIP() << "no AVX2 here: augment_hsv_fast runs the exact path";
  std::vector<cv::Vec3b> colours;
  for (int b = 0; b < 256; b += 3)
    for (int g = 0; g < 256; g += 3)
      for (int r = 0; r < 256; r += 3) colours.push_back({uchar(b), uchar(g), uchar(r)});
  // Rows of 640 (OpenCV's vector loop covers them whole; its scalar tail rounds where the loop truncates).
  for (size_t i = 0; colours.size() % 640 != 0; ++i) colours.push_back(colours[i]);
  const cv::Mat grid = cv::Mat(1, static_cast<int>(colours.size()), CV_8UC3, colours.data()).reshape(3, int(colours.size() / 640));
  const double cases[][3] = {{0, 0, 0}, {0.3, -0.5, 0.2}, {-1, -1, -1}, {1, 1, 1}, {0.7, 0.9, -0.8}};
  for (const bool shift_hue : {false, true})  // YOLOv5's scaled hue, Ultralytics' shifted one
    for (const auto& u : cases) {
      const HsvGains g = hsv_gains_from_u(u, 0.015, 0.7, 0.4, shift_hue);
      cv::Mat exact = grid.clone(), fused = grid.clone();
      augment_hsv(exact, g);
      augment_hsv_fast(fused, g);
      cv::Mat diff;
      cv::absdiff(exact, fused, diff);
      const int differing = cv::countNonZero(diff.reshape(1));
      std::printf("gains (%.3f, %.3f, %.3f)%s: %d of %zu values differ, max %g\n", g.r[0], g.r[1], g.r[2],
                  shift_hue ? ", hue shifted" : "", differing, diff.total() * 3, cv::norm(diff, cv::NORM_INF));
      EXPECT_LE(cv::norm(diff, cv::NORM_INF), 1);
      EXPECT_LT(differing, 100) << "more than ~1 in 20000 values";
    }
}

TEST(AugmentHsvFast, HandlesEveryWidthAndFallsBackForLargeHueGains) {
  cv::RNG rng(3);
  for (int w = 1; w <= 19; ++w) {  // every tail length, and rows that are not continuous
    cv::Mat wide(5, 40, CV_8UC3);
    rng.fill(wide, cv::RNG::UNIFORM, 0, 256);
    cv::Mat exact = wide.colRange(3, 3 + w).clone(), fused_view = wide.colRange(3, 3 + w);
    const cv::Mat untouched = wide.colRange(3 + w, 40).clone();
    const double u[3] = {0.5, 0.5, 0.5};
    const HsvGains g = hsv_gains_from_u(u, 0.015, 0.7, 0.4);
    augment_hsv(exact, g);
    augment_hsv_fast(fused_view, g);
    EXPECT_LE(cv::norm(fused_view, exact, cv::NORM_INF), 1) << "width " << w;
    EXPECT_EQ(cv::norm(wide.colRange(3 + w, 40), untouched, cv::NORM_INF), 0) << "width " << w << " wrote past the row";
  }
  // A hue gain of 2 or more wraps the hue more than once: the exact path runs, so the bytes are OpenCV's.
  cv::Mat img(16, 16, CV_8UC3);
  rng.fill(img, cv::RNG::UNIFORM, 0, 256);
  const double u[3] = {1, 0, 0};
  const HsvGains g = hsv_gains_from_u(u, 1.5, 0, 0);
  cv::Mat exact = img.clone(), fused = img.clone();
  augment_hsv(exact, g);
  augment_hsv_fast(fused, g);
  EXPECT_EQ(cv::norm(exact, fused, cv::NORM_INF), 0);
}

}  // namespace
}  // namespace kestrel
