// The validator end to end (dataset index, rect letterbox, forward, decode, NMS, matching, AP) on a
// model whose predictions are known by construction: the Detect convolutions have zero weights, so
// every cell predicts what its biases say whatever the image. Only the largest level's first anchor
// is confident (class 1, a 20x20 box at each cell centre); the labels put a class-1 box exactly on
// each of those predictions, plus boxes nothing predicts. The expected metrics follow from the
// definitions (101-point interpolated AP, mean over the classes that have labels), computed here.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>

#include "data/index/label_index.h"
#include "model/detection_model.h"
#include "model/model_config.h"
#include "test_support.h"
#include "val/validator.h"

namespace kestrel {
namespace {

double logit(double p) { return std::log(p / (1 - p)); }

// Zero Detect weights; biases: nothing confident but level 2 anchor 0, which predicts class 1 with a
// box of box_px x box_px centred on its cell.
void make_predictions_known(DetectionModelImpl& model, double box_px) {
  torch::NoGradGuard no_grad;
  const Detect& detect = model.detect();
  const int64_t no = model.no();
  for (int64_t level = 0; level < model.nl(); ++level) {
    auto& conv = detect->convs[level];
    conv->weight.zero_();
    conv->bias.fill_(-30.0);
  }
  auto bias = detect->convs[2]->bias;
  const torch::Tensor anchor = model.anchors()[2][0] * model.stride()[2];  // pixels
  bias[0] = 0.0, bias[1] = 0.0;  // sigmoid 0.5: the cell centre
  bias[2] = logit(std::sqrt(box_px / anchor[0].item<double>()) / 2);
  bias[3] = logit(std::sqrt(box_px / anchor[1].item<double>()) / 2);
  bias[4] = 3.0;      // objectness
  bias[5] = -30.0;    // class 0
  bias[6] = 3.0;      // class 1
  ASSERT_EQ(no, 7);
}

// A YOLO label line for the pixel box [x1,x2] x [y1,y2] of a 64 x 64 image.
std::string label(int cls, double x1, double y1, double x2, double y2) {
  char line[128];
  std::snprintf(line, sizeof line, "%d %.9f %.9f %.9f %.9f\n", cls, (x1 + x2) / 128, (y1 + y2) / 128, (x2 - x1) / 64,
                (y2 - y1) / 64);
  return line;
}

// The 101-point interpolated AP of a class whose `tp` predictions are all correct, all ranked above
// nothing else, out of `labels` labels: precision 1 up to recall tp/labels, then the straight line to
// (1, 0) that np.interp draws, integrated with the trapezoid rule.
double ap_all_correct(int tp, int labels) {
  const double r = static_cast<double>(tp) / labels;
  const auto precision = [&](double x) { return x <= r ? 1.0 : (1 - x) / (1 - r); };
  double area = 0;
  for (int k = 0; k < 100; ++k) area += 0.01 * (precision(k / 100.0) + precision((k + 1) / 100.0)) / 2;
  return area;
}

TEST(Validator, MetricsOfKnownPredictionsMatchTheDefinitions) {
  const std::string dir = test::temp_dir("validator");
  std::filesystem::create_directories(dir + "/images");
  std::filesystem::create_directories(dir + "/labels");
  // At --img 64 a 64x64 image is letterboxed into 96x96 (val's pad 0.5): the 3x3 cells of stride 32
  // centre the predictions on 0, 32 and 64 in original pixels, clipped to the image.
  std::string exact;
  for (double cy : {0, 32, 64})
    for (double cx : {0, 32, 64})
      exact += label(1, std::max(0.0, cx - 10), std::max(0.0, cy - 10), std::min(64.0, cx + 10), std::min(64.0, cy + 10));
  const cv::Mat grey(64, 64, CV_8UC3, cv::Scalar(114, 114, 114));
  for (const char* stem : {"a", "b"}) cv::imwrite(dir + "/images/" + stem + ".jpg", grey);
  std::ofstream(dir + "/labels/a.txt") << exact;
  // b: the same nine, one class-1 box and one class-0 box that no prediction touches.
  std::ofstream(dir + "/labels/b.txt") << exact << label(1, 12, 12, 20, 20) << label(0, 44, 12, 52, 20);

  const DatasetIndex index = build_index({dir + "/images"}, 2);
  ASSERT_EQ(index.records.size(), 2u);
  DetectionModel model(parse_model_config(test::micro_model_yaml(2, 8), "micro.yaml"));
  make_predictions_known(*model, 20.0);
  ValOptions o;
  o.img_size = 64;
  o.batch_size = 2;
  o.workers = 1;
  o.progress = false;
  Validator validator(index.records, {"zero", "one"}, o);
  const ValResult r = validator.run(*model, torch::kCPU);

  EXPECT_EQ(r.metrics.images, 2);
  EXPECT_EQ(r.metrics.instances, 20);
  const double ap1 = ap_all_correct(18, 19);  // every IoU threshold alike: the boxes coincide
  EXPECT_NEAR(r.metrics.map50, ap1 / 2, 1e-9);  // class 0 has labels and no prediction: AP 0
  EXPECT_NEAR(r.metrics.map, ap1 / 2, 1e-9);
  EXPECT_NEAR(r.metrics.mp, 0.5, 1e-6);          // class 1 precision 1, class 0 precision 0
  EXPECT_NEAR(r.metrics.mr, 18.0 / 19 / 2, 1e-6);
  EXPECT_NEAR(r.metrics.fitness(), 0.1 * ap1 / 2 + 0.9 * ap1 / 2, 1e-9);

  // Boxes of 14x14 against labels of 20x20: IoU 0.49 at the centre, below every threshold there, so the
  // centre predictions are wrong and their labels missed; fitness must drop.
  make_predictions_known(*model, 14.0);
  const ValResult smaller = validator.run(*model, torch::kCPU);
  EXPECT_LT(smaller.metrics.map, r.metrics.map);
}

// 8.4's rule: an Ultralytics model validates with max_det raised to the most objects an image holds;
// a --max-det the user gave, and a YOLOv5 model, keep theirs (with a warning).
TEST(Validator, MaxDetRisesToTheMostObjectsForUltralyticsModelsOnly) {
  std::vector<ImageRecord> crowded(2);
  crowded[0].labels.resize(12);
  crowded[1].labels.resize(412);
  EXPECT_EQ(most_objects(crowded), 412u);
  const SplitObjectCounts counts = {{"train", 350}, {"val", most_objects(crowded)}};

  ValOptions ultralytics;
  ultralytics.ultralytics = true;
  fit_max_det(ultralytics, counts);
  EXPECT_EQ(ultralytics.max_det, 412);

  ValOptions given;
  given.ultralytics = true;
  given.max_det = 100;
  fit_max_det(given, counts);
  EXPECT_EQ(given.max_det, 100);

  ValOptions yolov5;
  fit_max_det(yolov5, counts);
  EXPECT_EQ(yolov5.max_det, std::nullopt);  // val.py's 300 stays

  ValOptions sparse;
  sparse.ultralytics = true;
  fit_max_det(sparse, {{"val", 300}});
  EXPECT_EQ(sparse.max_det, std::nullopt);
}

}  // namespace
}  // namespace kestrel
