// Tests for eval/metrics: process_batch, ap_per_class and val.py's aggregation against YOLOv5's
// reference vectors, plus the per-image statistics step and the results table.
#include "eval/metrics.h"

#include <algorithm>

#include "torch_support.h"

namespace kestrel {
namespace {

using test::json_doubles;
using test::json_floats;
using test::json_tensor;
using test::reference;

TEST(IouThresholds, AreTorchLinspace) {
  const auto& c = reference("metrics_process_batch.json").at("cases")[0];
  EXPECT_TRUE(torch::equal(iou_thresholds(), json_tensor(c.at("inputs").at("iouv"))));
}

TEST(ProcessBatch, MatchesYolov5Exactly) {
  for (const auto& c : reference("metrics_process_batch.json").at("cases")) {
    const auto& in = c.at("inputs");
    const auto correct = process_batch(json_tensor(in.at("detections")), json_tensor(in.at("labels")),
                                       json_tensor(in.at("iouv")));
    const auto expected = json_tensor(c.at("outputs").at("correct"), torch::kBool);
    ASSERT_EQ(correct.sizes(), expected.sizes());
    EXPECT_TRUE(torch::equal(correct, expected)) << c.at("description").get<std::string>();
  }
}

TEST(ProcessBatch, EmptyInputsGiveNoMatches) {
  const auto iouv = iou_thresholds();
  EXPECT_EQ(process_batch(torch::zeros({0, 6}), torch::zeros({2, 5}), iouv).sizes(),
            (std::vector<int64_t>{0, 10}));
  const auto none = process_batch(torch::ones({3, 6}), torch::zeros({0, 5}), iouv);
  EXPECT_EQ(none.sizes(), (std::vector<int64_t>{3, 10}));
  EXPECT_FALSE(none.any().item<bool>());
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want,
                     const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-9) << what << "[" << i << "]";
}

ValStats stats_from(const nlohmann::json& in) {
  ValStats s;
  for (double v : json_doubles(in.at("tp"))) s.correct.push_back(v != 0);
  s.conf = json_floats(in.at("conf"));
  s.pred_cls = json_floats(in.at("pred_cls"));
  s.target_cls = json_floats(in.at("target_cls"));
  return s;
}

void expect_ap_matches(const std::string& file) {
  const auto& ref = reference(file);
  const auto& out = ref.at("outputs");
  const ValStats s = stats_from(ref.at("inputs"));
  const auto res = ap_per_class(s.correct, 10, s.conf, s.pred_cls, s.target_cls);
  std::vector<int> want_classes;
  for (double c : json_doubles(out.at("ap_class"))) want_classes.push_back(static_cast<int>(c));
  EXPECT_EQ(res.ap_class, want_classes);
  expect_near_all(res.p, json_doubles(out.at("p")), file + " p");
  expect_near_all(res.r, json_doubles(out.at("r")), file + " r");
  expect_near_all(res.f1, json_doubles(out.at("f1")), file + " f1");
  expect_near_all(res.ap, json_doubles(out.at("ap")), file + " ap");
  expect_near_all(res.tp, json_doubles(out.at("tp_at_max_f1")), file + " tp");
  expect_near_all(res.fp, json_doubles(out.at("fp_at_max_f1")), file + " fp");

  const int nc = ref.at("nc").get<int>();
  const ValMetrics m = s.compute(nc);
  EXPECT_NEAR(m.mp, out.at("mp").get<double>(), 1e-9);
  EXPECT_NEAR(m.mr, out.at("mr").get<double>(), 1e-9);
  EXPECT_NEAR(m.map50, out.at("map50").get<double>(), 1e-9);
  EXPECT_NEAR(m.map, out.at("map").get<double>(), 1e-9);
  EXPECT_NEAR(m.fitness(), out.at("fitness").get<double>(), 1e-9);
  expect_near_all(m.maps, json_doubles(out.at("maps")), file + " maps");
  std::vector<double> ap50, ap;
  for (const auto& c : m.classes) ap50.push_back(c.ap50), ap.push_back(c.ap);
  expect_near_all(ap50, json_doubles(out.at("ap50")), file + " ap50");
  expect_near_all(ap, json_doubles(out.at("ap50_95")), file + " ap50_95");
  EXPECT_EQ(m.instances, static_cast<int64_t>(s.target_cls.size()));
}

TEST(ApPerClass, MatchesYolov5Small) { expect_ap_matches("metrics_ap_small.json"); }
TEST(ApPerClass, MatchesYolov5Large) { expect_ap_matches("metrics_ap_large.json"); }

// Ultralytics' ap_per_class on the same inputs: only the curve's end differs, and with it the AP.
TEST(ApPerClass, MatchesUltralyticsWhereTheCurveEndsAtTheLastRecall) {
  for (const std::string file : {"ultralytics/metrics_ap_small.json", "ultralytics/metrics_ap_large.json"}) {
    const auto& ref = reference(file);
    const auto& out = ref.at("outputs");
    const ValStats s = stats_from(ref.at("inputs"));
    const auto res = ap_per_class(s.correct, 10, s.conf, s.pred_cls, s.target_cls, PrCurveEnd::at_last_recall);
    expect_near_all(res.p, json_doubles(out.at("p")), file + " p");
    expect_near_all(res.r, json_doubles(out.at("r")), file + " r");
    expect_near_all(res.ap, json_doubles(out.at("ap")), file + " ap");
    expect_near_all(res.tp, json_doubles(out.at("tp_at_max_f1")), file + " tp");
    expect_near_all(res.fp, json_doubles(out.at("fp_at_max_f1")), file + " fp");
    // Against YOLOv5's rule the AP moves (both files have classes whose recall stops short of 1).
    const auto yolov5 = ap_per_class(s.correct, 10, s.conf, s.pred_cls, s.target_cls);
    EXPECT_NE(yolov5.ap, res.ap) << file;

    // A pass scored by Ultralytics' rules: its mAP50-95 is the mean of those APs, and its fitness
    // that mAP alone (DetMetrics.fitness weighs [0, 0, 0, 1]).
    ValStats scored = s;
    scored.rules = scoring_rules(/*ultralytics=*/true);
    const ValMetrics m = scored.compute(80);
    const std::vector<double> want_ap = json_doubles(out.at("ap"));
    double sum = 0;
    for (double v : want_ap) sum += v;
    EXPECT_NEAR(m.map, sum / static_cast<double>(want_ap.size()), 1e-9) << file;
    EXPECT_DOUBLE_EQ(m.fitness(), m.map) << file;
    EXPECT_NE(s.compute(80).map, m.map) << file;  // YOLOv5's rules score the same pass otherwise
  }
}

TEST(ComputeAp, PerfectHalfAndEmptyCurves) {
  // np.interp at x == 1 picks the last of the duplicated recall-1 points, whose sentinel precision
  // is 0: a perfect detector scores 0.995, as in YOLOv5.
  EXPECT_NEAR(compute_ap({1.0}, {1.0}), 0.995, 1e-12);
  // Half the labels found at full precision: 1 up to recall 0.5, then a linear ramp to 0 at 1.
  EXPECT_NEAR(compute_ap({0.5}, {1.0}), 0.75, 1e-12);
  EXPECT_NEAR(compute_ap({0.0}, {0.0}), 0.0, 1e-12);
}

TEST(ValStats, NoCorrectDetectionGivesZeroMetrics) {
  ValStats s;
  s.seen = 2;
  s.correct.assign(10, 0);
  s.conf = {0.9f};
  s.pred_cls = {1.f};
  s.target_cls = {0.f, 0.f, 2.f};
  const auto m = s.compute(3);
  EXPECT_EQ(m.map, 0.0);
  EXPECT_EQ(m.maps, std::vector<double>(3, 0.0));
  EXPECT_TRUE(m.classes.empty());
  EXPECT_EQ(m.instances, 3);
}

TEST(ValStats, AddImageFollowsValPy) {
  // 480x640 image letterboxed into 320x320 (ratio 0.5, 40 px padding top and bottom).
  LetterboxInfo lb;
  lb.orig_h = 480, lb.orig_w = 640, lb.ratio_h = lb.ratio_w = 0.5, lb.pad_w = 0, lb.pad_h = 40;
  // One label of class 2 covering x 20..200, y 20..120 of the original -> letterboxed 10..100 x 50..100.
  const auto labels = torch::tensor({{2.f, 55.f / 320, 75.f / 320, 90.f / 320, 50.f / 320}});
  const auto pred = torch::tensor({{10.f, 50.f, 100.f, 100.f, 0.9f, 2.f},     // exact: TP everywhere
                                   {10.f, 50.f, 100.f, 100.f, 0.8f, 1.f},     // wrong class
                                   {10.f, 50.f, 55.f, 100.f, 0.7f, 2.f}});    // IoU 0.5
  ValStats s;
  const auto iouv = iou_thresholds();
  s.add_image(pred, labels, 320, 320, lb, iouv);
  s.add_image(torch::zeros({0, 6}), labels, 320, 320, lb, iouv);          // labels, no predictions
  s.add_image(torch::zeros({0, 6}), torch::zeros({0, 5}), 320, 320, lb, iouv);  // nothing appended
  EXPECT_EQ(s.seen, 3);
  ASSERT_EQ(s.conf.size(), 3u);
  EXPECT_EQ(s.target_cls, (std::vector<float>{2.f, 2.f}));
  std::vector<uint8_t> want(30, 0);
  for (int k = 0; k < 10; ++k) want[k] = 1;
  EXPECT_EQ(s.correct, want);  // the IoU-0.5 box is matched only if the label were free
  EXPECT_EQ(s.pred_cls, (std::vector<float>{2.f, 1.f, 2.f}));

  const auto m = s.compute(3);
  ASSERT_EQ(m.classes.size(), 1u);
  EXPECT_EQ(m.classes[0].cls, 2);
  EXPECT_EQ(m.classes[0].images, 3);
  EXPECT_EQ(m.classes[0].instances, 2);
  EXPECT_NEAR(m.mr, 0.5, 1e-12);
}

// A box reaching into the letterbox padding: YOLOv5 maps it to the original image and clips it there
// (IoU 0.8 with its label), Ultralytics matches it unclipped in the input's pixels (IoU 2/3). Class
// rows count every image (YOLOv5) or the images holding the class (Ultralytics).
TEST(ValStats, EachFamilyMatchesInItsOwnPixels) {
  LetterboxInfo lb;
  lb.orig_h = 480, lb.orig_w = 640, lb.ratio_h = lb.ratio_w = 0.5, lb.pad_w = 0, lb.pad_h = 40;
  // Label of class 0: letterboxed x 0..100, y 40..140 (original 0..200 x 0..200); one of class 1.
  const auto labels = torch::tensor({{0.f, 50.f / 320, 90.f / 320, 100.f / 320, 100.f / 320},
                                     {1.f, 250.f / 320, 200.f / 320, 40.f / 320, 40.f / 320}});
  const auto pred = torch::tensor({{-20.f, 40.f, 80.f, 140.f, 0.9f, 0.f}, {230.f, 180.f, 270.f, 220.f, 0.8f, 1.f}});
  const auto other = torch::tensor({{1.f, 0.5f, 0.5f, 0.1f, 0.1f}});  // a second image holding class 1 only
  const auto iouv = iou_thresholds();
  const auto correct_of_first = [&](const ScoringRules& rules) {
    ValStats s;
    s.rules = rules;
    s.add_image(pred, labels, 320, 320, lb, iouv);
    s.add_image(torch::zeros({0, 6}), other, 320, 320, lb, iouv);
    return s;
  };
  const ValStats v5 = correct_of_first(scoring_rules(false)), ultra = correct_of_first(scoring_rules(true));
  const auto hits = [](const ValStats& s) { return std::count(s.correct.begin(), s.correct.begin() + 10, 1); };
  EXPECT_EQ(hits(v5), 7);     // IoU 0.8: thresholds 0.50..0.80
  EXPECT_EQ(hits(ultra), 4);  // IoU 0.667: thresholds 0.50..0.65
  EXPECT_EQ(v5.compute(2).classes.at(1).images, 2);  // every image seen
  const ValMetrics um = ultra.compute(2);
  EXPECT_EQ(um.classes.at(0).images, 1);
  EXPECT_EQ(um.classes.at(1).images, 2);
}

TEST(FormatValTable, LooksLikeYolov5) {
  ValMetrics m;
  m.images = 128, m.instances = 929, m.mp = 0.70312, m.mr = 0.6, m.map50 = 0.5, m.map = 0.123456;
  m.classes.push_back({0, 128, 254, 1.0, 0.0, 0.0004567, 0.25});
  const auto table = format_val_table(m, {"person"}, true);
  EXPECT_EQ(table,
            "                 Class     Images  Instances          P          R      mAP50   mAP50-95\n"
            "                   all        128        929      0.703        0.6        0.5      0.123\n"
            "                person        128        254          1          0   0.000457       0.25\n");
  EXPECT_EQ(format_val_table(m, {"person"}, false).find("person"), std::string::npos);
}

}  // namespace
}  // namespace kestrel
