// The bar chart from known bars: the file is written, bars are as long as their values (measured
// in the picture's pixels), each in its group's colour.
#include <gtest/gtest.h>

#include <filesystem>
#include <opencv2/imgcodecs.hpp>

#include "report/bar_chart.h"
#include "test_support.h"

namespace kestrel {
namespace {

// The pixel columns of row `y` that have `colour`.
int coloured_run(const cv::Mat& img, int y, const cv::Vec3b& colour) {
  int n = 0;
  for (int x = 0; x < img.cols; ++x) n += img.at<cv::Vec3b>(y, x) == colour;
  return n;
}

TEST(BarChart, BarsAreAsLongAsTheirValuesInTheirGroupsColour) {
  BarChart c;
  c.title = "epoch time per step";
  c.value_label = "epoch time (s)";
  c.value_unit = "s";
  c.groups = {"kept", "dropped"};
  c.bars = {{"baseline", 10.0, 0}, {"lever", 5.0, 1}};
  const cv::Mat img = draw_bar_chart(c);
  // Rows are 40 px from y = 60; a bar's middle line is at 80 + 40 i.
  const int first = coloured_run(img, 80, {60, 160, 60}), second = coloured_run(img, 120, {170, 170, 170});
  EXPECT_GT(first, 300);
  EXPECT_NEAR(static_cast<double>(second) / first, 0.5, 0.02);

  const std::string path = test::temp_dir("bar_chart") + "/ladder.png";
  write_bar_chart(c, path);
  const cv::Mat back = cv::imread(path);
  ASSERT_FALSE(back.empty());
  EXPECT_EQ(back.size(), img.size());
}

TEST(BarChart, UnwritablePathIsNamed) {
  BarChart c;
  c.bars = {{"a", 1.0, 0}};
  try {
    write_bar_chart(c, "/proc/no/such/dir/ladder.png");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/no/such/dir/ladder.png"), std::string::npos);
  }
}

}  // namespace
}  // namespace kestrel
