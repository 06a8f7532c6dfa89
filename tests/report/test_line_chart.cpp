// Line charts: the PNG exists with the asked size, each series is drawn in its own colour, and a
// chart row puts the panels side by side.
#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>

#include "report/line_chart.h"
#include "test_support.h"

namespace kestrel {
namespace {

int pixels_of(const cv::Mat& img, cv::Vec3b colour) {
  int n = 0;
  for (int y = 0; y < img.rows; ++y)
    for (int x = 0; x < img.cols; ++x) n += img.at<cv::Vec3b>(y, x) == colour;
  return n;
}

TEST(LineChart, DrawsEverySeriesInItsColour) {
  LineChart c;
  c.title = "loss", c.x_label = "epoch", c.y_label = "loss";
  c.series = {{"fp32", {{0, 1.0}, {1, 0.8}, {2, 0.7}}}, {"bf16", {{0, 1.1}, {1, 0.75}, {2, 0.6}}}};
  const std::string dir = test::temp_dir("line_chart");
  write_line_chart(c, dir + "/one.png");
  const cv::Mat img = cv::imread(dir + "/one.png");
  ASSERT_EQ(img.cols, 900);
  ASSERT_EQ(img.rows, 520);
  EXPECT_GT(pixels_of(img, {200, 110, 30}), 50);  // first series' colour (BGR)
  EXPECT_GT(pixels_of(img, {40, 120, 230}), 50);  // second
  write_line_charts({c, c, c}, dir + "/row.png");
  EXPECT_EQ(cv::imread(dir + "/row.png").cols, 3 * 900);
  EXPECT_THROW(write_line_chart(c, dir + "/missing/dir/x.png"), std::runtime_error);
}

}  // namespace
}  // namespace kestrel
