// augment_hsv against YOLOv5's recorded gains, tables and pixels (augment_hsv.json): exact with OpenCV 4.6.
#include <opencv2/imgproc.hpp>

#include "data/hsv.h"
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
    const HsvLuts luts = hsv_luts(g.r);
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

}  // namespace
}  // namespace kestrel
