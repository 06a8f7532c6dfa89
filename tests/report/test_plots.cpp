// The run folder's pictures drawn from known data: each file is written with the expected layout,
// carries its data in the expected colours, and bad input names its file and line. Smoothing is
// checked against scipy's gaussian_filter1d values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>

#include "report/batch_plot.h"
#include "report/confusion_plot.h"
#include "report/curve_plots.h"
#include "report/labels_plot.h"
#include "report/plot_canvas.h"
#include "report/results_plot.h"
#include "test_support.h"

namespace kestrel {
namespace {

// Pixels within `tol` of a BGR colour (JPEG and anti-aliasing move colours a little).
int pixels_near(const cv::Mat& img, cv::Scalar colour, int tol = 12) {
  int n = 0;
  for (int y = 0; y < img.rows; ++y)
    for (int x = 0; x < img.cols; ++x) {
      const cv::Vec3b p = img.at<cv::Vec3b>(y, x);
      n += std::abs(p[0] - colour[0]) <= tol && std::abs(p[1] - colour[1]) <= tol && std::abs(p[2] - colour[2]) <= tol;
    }
  return n;
}

TEST(GaussianSmooth, MatchesScipyWithReflectedEdges) {
  // gaussian_filter1d([0, 0, 1, 0, 0], 1): the normalised kernel w(k) = exp(-k^2/2) / 2.50662,
  // reflected at the edges: out[0] = w(2) + w(3), out[1] = w(1) + w(4), out[2] = w(0).
  const std::vector<double> out = gaussian_smooth({0, 0, 1, 0, 0}, 1.0);
  EXPECT_NEAR(out[0], 0.0584232, 1e-6);
  EXPECT_NEAR(out[1], 0.2421052, 1e-6);
  EXPECT_NEAR(out[2], 0.3989434, 1e-6);
  EXPECT_NEAR(out[4], out[0], 1e-12);
  for (double v : gaussian_smooth({2, 2, 2}, 3)) EXPECT_NEAR(v, 2, 1e-12);
}

std::string write_csv(const std::string& dir, const std::string& body) {
  const std::string path = dir + "/results.csv";
  std::ofstream(path) << "               epoch,      train/box_loss,      train/obj_loss,      train/cls_loss,"
                         "   metrics/precision,      metrics/recall,     metrics/mAP_0.5,metrics/mAP_0.5:0.95,"
                         "        val/box_loss,        val/obj_loss,        val/cls_loss,               x/lr0,"
                         "               x/lr1,               x/lr2\n"
                      << body;
  return path;
}

TEST(ResultsPlot, TenPanelsFromResultsCsv) {
  const std::string dir = test::temp_dir("results_plot");
  std::string rows;
  for (int e = 0; e < 8; ++e)
    rows += std::to_string(e) + ", 0.1, 0.05, 0.02, 0.5, 0.4, 0.3, 0.2, 0.09, 0.04, 0.01, 0.01, 0.01, 0.01\n";
  write_results_plot(write_csv(dir, rows), dir + "/results.png");
  const cv::Mat img = cv::imread(dir + "/results.png");
  EXPECT_EQ(img.cols, 5 * 420);
  EXPECT_EQ(img.rows, 2 * 340);
  const ResultsTable t = read_results_csv(dir + "/results.csv");
  EXPECT_EQ(t.keys[7], "metrics/mAP_0.5:0.95");
  EXPECT_EQ(t.rows.size(), 8u);
}

TEST(ResultsPlot, UltralyticsColumnsGiveTheirPanels) {
  const std::string dir = test::temp_dir("results_plot_u");
  std::ofstream(dir + "/results.csv") << "epoch,time,train/box_loss,train/cls_loss,train/dfl_loss,metrics/precision(B),"
                                         "metrics/recall(B),metrics/mAP50(B),metrics/mAP50-95(B),val/box_loss,val/cls_loss,"
                                         "val/dfl_loss,lr/pg0,lr/pg1,lr/pg2\n1,10,1.5,2.5,1.2,0.5,0.4,0.3,0.2,1.4,2.4,1.1,0.001,0.001,0.001\n"
                                         "2,20,1.4,2.2,1.1,0.6,0.5,0.4,0.25,1.3,2.1,1.0,0.001,0.001,0.001\n";
  write_results_plot(dir + "/results.csv", dir + "/results.png");
  EXPECT_EQ(cv::imread(dir + "/results.png").cols, 5 * 420);
  std::ofstream(dir + "/results.csv") << "epoch,time,train/box_loss\n1,10,1.5\n";  // not a detection run's file
  EXPECT_THROW(write_results_plot(dir + "/results.csv", dir + "/results.png"), std::runtime_error);
}

TEST(ResultsPlot, BadRowNamesFileAndLine) {
  const std::string dir = test::temp_dir("results_plot_bad");
  const std::string csv = write_csv(dir, "0, 0.1, 0.05, 0.02, 0.5, 0.4, 0.3, 0.2, 0.09, 0.04, 0.01, 0.01, 0.01, 0.01\n"
                                         "1, 0.1, nan?, 0.02, 0.5, 0.4, 0.3, 0.2, 0.09, 0.04, 0.01, 0.01, 0.01, 0.01\n");
  try {
    write_results_plot(csv, dir + "/results.png");
    FAIL() << "a bad value must throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("results.csv:3"), std::string::npos) << e.what();
  }
}

TEST(ConfusionPlot, ShadesTheDiagonalOfAPerfectModel) {
  const int nc = 3;
  std::vector<double> m((nc + 1) * (nc + 1), 0.0);
  for (int i = 0; i < nc; ++i) m[i * (nc + 1) + i] = 10;
  const std::string path = test::temp_dir("confusion_plot") + "/confusion_matrix.png";
  write_confusion_plot(m, nc, {"crack", "dent", "scratch"}, path);
  const cv::Mat img = cv::imread(path);
  ASSERT_FALSE(img.empty());
  EXPECT_GT(img.cols, 200);
  // Three 60 px cells in the darkest blue of the scale (value 1.0, less their white "1.00"), and no
  // fourth: the off-diagonal and background cells are blank.
  const int dark = pixels_near(img, cv::Scalar(107, 48, 8), 4);
  EXPECT_GT(dark, 3 * 60 * 60 * 8 / 10);
  EXPECT_LT(dark, 4 * 60 * 60);
}

TEST(CurvePlots, FourCurvesWithEveryClassInItsColour) {
  ClassCurves c;
  for (int i = 0; i < 1000; ++i) c.px.push_back(i / 999.0);
  c.classes = {0, 4};
  for (int k = 0; k < 2; ++k) {
    std::vector<double> pr, p, r, f1;
    for (double x : c.px) {  // the two classes differ everywhere, so neither hides under the mean
      pr.push_back(1 - 0.5 * k * x), p.push_back(std::pow(x, 1 + 2 * k)), r.push_back(1 - std::pow(x, 2 + 2 * k));
      f1.push_back(2 * p.back() * r.back() / (p.back() + r.back() + 1e-16));
    }
    c.pr.push_back(pr), c.p.push_back(p), c.r.push_back(r), c.f1.push_back(f1);
  }
  c.ap50 = {1.0, 0.75};
  const std::string dir = test::temp_dir("curve_plots");
  write_curve_plots(c, {"a", "b", "c", "d", "e"}, dir);
  for (const char* name : {"PR_curve.png", "F1_curve.png", "P_curve.png", "R_curve.png"}) {
    const cv::Mat img = cv::imread(dir + "/" + name);
    ASSERT_FALSE(img.empty()) << name;
    EXPECT_GT(pixels_near(img, class_colour(4)), 400) << name;  // its curve, not only its legend entry
  }
}

TEST(LabelsPlot, WritesTheFourPanels) {
  std::vector<Label> labels;
  for (int i = 0; i < 200; ++i) labels.push_back({static_cast<float>(i % 3), 0.2f + 0.003f * i, 0.5f, 0.1f, 0.05f});
  const std::string path = test::temp_dir("labels_plot") + "/labels.jpg";
  write_labels_plot(labels, {"bolt", "nut", "washer"}, path);
  const cv::Mat img = cv::imread(path);
  ASSERT_FALSE(img.empty());
  EXPECT_GT(img.cols, 400);
  EXPECT_GT(pixels_near(img, class_colour(2), 30), 50);  // the third class's bar
  EXPECT_THROW(write_labels_plot(labels, {}, test::temp_dir("labels_plot") + "/no/such/dir/labels.jpg"), std::runtime_error);
}

TEST(BatchPlot, BoxesInClassColoursAndLowConfidenceLeftOut) {
  BatchPicture b;
  b.n = 2, b.h = 120, b.w = 160;
  b.pixels.assign(static_cast<size_t>(b.n) * 3 * b.h * b.w, 90);  // plain grey images
  b.paths = {"/data/a.jpg", "/data/b.jpg"};
  b.boxes = {{0, 2, -1, 20, 30, 100, 90}, {1, 5, 0.1f, 10, 10, 150, 110}};
  const std::string dir = test::temp_dir("batch_plot");
  write_batch_plot(b, {}, dir + "/train_batch0.jpg");
  const cv::Mat img = cv::imread(dir + "/train_batch0.jpg");
  EXPECT_EQ(img.cols, 2 * 160);  // a 2x2 grid for two images
  EXPECT_EQ(img.rows, 2 * 120);
  EXPECT_GT(pixels_near(img, class_colour(2), 40), 100);
  EXPECT_EQ(pixels_near(img, class_colour(5), 40), 0);  // conf 0.1 is under the 0.25 drawn
}

}  // namespace
}  // namespace kestrel
