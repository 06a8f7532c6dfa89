// letterbox_geometry / letterbox against YOLOv5 v7.0 (boxes_letterbox_candidates.json): all 168 geometry
// cases exactly, and full pixel outputs exactly (same OpenCV 4.6).
#include <opencv2/core.hpp>

#include "data/augment/letterbox.h"
#include "test_support.h"

namespace kestrel {
namespace {

using test::reference;

std::pair<int, int> new_shape_hw(const nlohmann::json& s) {
  if (s.is_number()) return {s.get<int>(), s.get<int>()};
  return {s[0].get<int>(), s[1].get<int>()};
}

TEST(Letterbox, GeometryMatchesYolov5) {
  const auto& cases = reference("boxes_letterbox_candidates.json").at("letterbox").at("cases");
  ASSERT_EQ(cases.size(), 168u);
  for (const auto& c : cases) {
    const int h = c["in_hw"][0], w = c["in_hw"][1];
    const auto [nh, nw] = new_shape_hw(c["new_shape"]);
    const bool auto_pad = c["auto"], scaleup = c["scaleup"];
    SCOPED_TRACE(c.dump());
    const LetterboxGeometry g = letterbox_geometry(h, w, nh, nw, auto_pad, scaleup);
    EXPECT_EQ(g.ratio, c["ratio"][0].get<double>());
    EXPECT_EQ(g.dw, c["pad"][0].get<double>());
    EXPECT_EQ(g.dh, c["pad"][1].get<double>());
    EXPECT_EQ(g.new_unpad_w, c["new_unpad_wh"][0].get<int>());
    EXPECT_EQ(g.new_unpad_h, c["new_unpad_wh"][1].get<int>());
    const auto& tblr = c["top_bottom_left_right"];
    EXPECT_EQ(g.top, tblr[0].get<int>());
    EXPECT_EQ(g.bottom, tblr[1].get<int>());
    EXPECT_EQ(g.left, tblr[2].get<int>());
    EXPECT_EQ(g.right, tblr[3].get<int>());
    EXPECT_EQ(g.top + g.new_unpad_h + g.bottom, c["out_hw"][0].get<int>());
    EXPECT_EQ(g.left + g.new_unpad_w + g.right, c["out_hw"][1].get<int>());
  }
}

TEST(Letterbox, BordersOnSmallCasesMatchMeasuredWidths) {
  // Letterbox a white image and measure the grey border, as the generator did (small inputs only, for speed).
  const auto& cases = reference("boxes_letterbox_candidates.json").at("letterbox").at("cases");
  int checked = 0;
  for (const auto& c : cases) {
    const int h = c["in_hw"][0], w = c["in_hw"][1];
    if (h * w > 100000) continue;
    const auto [nh, nw] = new_shape_hw(c["new_shape"]);
    const cv::Mat white(h, w, CV_8UC3, cv::Scalar(255, 255, 255));
    cv::Mat out;
    LetterboxInfo info;
    letterbox(white, nh, nw, c["auto"], c["scaleup"], out, &info);
    SCOPED_TRACE(c.dump());
    ASSERT_EQ(out.rows, c["out_hw"][0].get<int>());
    ASSERT_EQ(out.cols, c["out_hw"][1].get<int>());
    const auto& tblr = c["top_bottom_left_right"];
    const int top = tblr[0], bottom = tblr[1], left = tblr[2], right = tblr[3];
    const int mid_y = top + (out.rows - top - bottom) / 2, mid_x = left + (out.cols - left - right) / 2;
    for (int y = 0; y < out.rows; ++y)
      EXPECT_EQ(out.at<cv::Vec3b>(y, mid_x)[0], (y < top || y >= out.rows - bottom) ? 114 : 255) << "y=" << y;
    for (int x = 0; x < out.cols; ++x)
      EXPECT_EQ(out.at<cv::Vec3b>(mid_y, x)[1], (x < left || x >= out.cols - right) ? 114 : 255) << "x=" << x;
    EXPECT_EQ(info.orig_h, h);
    EXPECT_EQ(info.orig_w, w);
    EXPECT_EQ(info.ratio_h, c["ratio"][0].get<double>());
    EXPECT_EQ(info.pad_w, c["pad"][0].get<double>());
    EXPECT_EQ(info.pad_h, c["pad"][1].get<double>());
    ++checked;
  }
  EXPECT_GT(checked, 30);
}

cv::Mat json_image(const nlohmann::json& t) {
  const auto shape = test::json_shape(t);
  const auto values = test::json_doubles(t);
  cv::Mat m(static_cast<int>(shape[0]), static_cast<int>(shape[1]), CV_8UC3);
  for (size_t i = 0; i < values.size(); ++i) m.data[i] = static_cast<uint8_t>(values[i]);
  return m;
}

TEST(Letterbox, PixelsMatchYolov5Exactly) {
  const auto& cases = reference("boxes_letterbox_candidates.json").at("letterbox_pixels").at("cases");
  ASSERT_EQ(cases.size(), 5u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c["image"]["shape"].dump() + " -> " + c["new_shape"].dump());
    const cv::Mat img = json_image(c["image"]), expected = json_image(c["out"]);
    const auto [nh, nw] = new_shape_hw(c["new_shape"]);
    cv::Mat out;
    LetterboxInfo info;
    letterbox(img, nh, nw, c["auto"], c["scaleup"], out, &info);
    ASSERT_EQ(out.size(), expected.size());
    EXPECT_EQ(cv::norm(out, expected, cv::NORM_INF), 0.0);
    EXPECT_EQ(info.ratio_w, c["ratio"][1].get<double>());
    EXPECT_EQ(info.pad_w, c["pad"][0].get<double>());
    EXPECT_EQ(info.pad_h, c["pad"][1].get<double>());
  }
}

TEST(Letterbox, ReusesOutputBufferAndAllowsAliasing) {
  cv::Mat img(40, 60, CV_8UC3, cv::Scalar(1, 2, 3));
  cv::Mat out;
  letterbox(img, 64, 64, false, true, out, nullptr);
  const uchar* buffer = out.data;
  letterbox(img, 64, 64, false, true, out, nullptr);
  EXPECT_EQ(out.data, buffer);
  cv::Mat same = img.clone();
  letterbox(same, 64, 64, false, true, same, nullptr);  // in place
  EXPECT_EQ(cv::norm(same, out, cv::NORM_INF), 0.0);
}

}  // namespace
}  // namespace kestrel
