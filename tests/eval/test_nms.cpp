// Tests for eval/nms: YOLOv5's non_max_suppression reference outputs and its class-offset quirk, and
// Ultralytics' (no objectness) on the anchor-free head's layout.
#include "eval/nms.h"

#include <cmath>

#include "torch_support.h"

namespace kestrel {
namespace {

using test::json_doubles;
using test::json_tensor;
using test::reference;

NmsOptions options_from(const nlohmann::json& params) {
  NmsOptions o;
  o.conf_thres = params.at("conf_thres").get<double>();
  o.iou_thres = params.at("iou_thres").get<double>();
  o.multi_label = params.at("multi_label").get<bool>();
  o.max_det = params.at("max_det").get<int>();
  o.agnostic = params.at("agnostic").get<bool>();
  o.max_nms = params.at("max_nms").get<int>();
  EXPECT_TRUE(params.at("classes").is_null());
  EXPECT_EQ(params.at("max_wh").get<int>(), 7680);
  return o;
}

void expect_matches_reference(const std::string& file, bool objectness = true) {
  const auto& ref = reference(file);
  const auto pred = json_tensor(ref.at("inputs").at("prediction"));
  NmsOptions options = options_from(ref.at("params"));
  options.objectness = objectness;
  const auto out = non_max_suppression(pred, options);
  const auto& expected = ref.at("outputs").at("detections");
  ASSERT_EQ(out.size(), expected.size());
  for (size_t b = 0; b < out.size(); ++b) {
    const auto want = json_doubles(expected[b]);
    const auto& got = out[b];
    ASSERT_EQ(got.dim(), 2);
    ASSERT_EQ(got.size(1), 6);
    ASSERT_EQ(static_cast<size_t>(got.size(0)) * 6, want.size()) << file << " image " << b;
    EXPECT_EQ(got.size(0), ref.at("outputs").at("kept")[b].get<int64_t>());
    const float* g = got.data_ptr<float>();
    for (int64_t i = 0; i < got.size(0); ++i) {
      const double* w = want.data() + i * 6;
      const float* r = g + i * 6;
      ASSERT_EQ(r[5], static_cast<float>(w[5])) << file << " image " << b << " row " << i;
      for (int k = 0; k < 4; ++k) EXPECT_NEAR(r[k], w[k], 1e-4) << file << " row " << i;
      EXPECT_NEAR(r[4], w[4], 1e-6 * std::abs(w[4])) << file << " row " << i;
    }
  }
}

TEST(Nms, MatchesYolov5ValSettings) { expect_matches_reference("nms_val.json"); }
TEST(Nms, MatchesYolov5DetectSettings) { expect_matches_reference("nms_detect.json"); }
TEST(Nms, MatchesYolov5MaxDetTruncation) { expect_matches_reference("nms_maxdet.json"); }
TEST(Nms, MatchesYolov5Agnostic) { expect_matches_reference("nms_agnostic.json"); }
TEST(Nms, MatchesUltralyticsValSettingsWithoutObjectness) { expect_matches_reference("ultralytics/nms_val.json", false); }
TEST(Nms, MatchesUltralyticsPredictSettingsWithoutObjectness) { expect_matches_reference("ultralytics/nms_predict.json", false); }

// One row: x, y, w, h, obj, then nc class scores.
torch::Tensor rows(const std::vector<std::vector<float>>& r) {
  auto t = torch::zeros({1, static_cast<int64_t>(r.size()), static_cast<int64_t>(r[0].size())});
  for (size_t i = 0; i < r.size(); ++i)
    for (size_t k = 0; k < r[i].size(); ++k) t[0][i][k] = r[i][k];
  return t;
}

std::vector<float> row(float x, float y, float w, float h, float obj, int nc, int cls, float score) {
  std::vector<float> r = {x, y, w, h, obj};
  r.resize(5 + nc, 0.0f);
  r[5 + cls] = score;
  return r;
}

// The family defaults the validator and detect start from (a user's --iou-thres and --max-det win).
TEST(Nms, FamilyDefaults) {
  const NmsOptions v5_val = val_nms_options(), u_val = val_nms_options(/*anchor_free=*/true);
  EXPECT_EQ(v5_val.iou_thres, 0.6);
  EXPECT_TRUE(v5_val.objectness);
  EXPECT_EQ(u_val.iou_thres, 0.7);
  EXPECT_FALSE(u_val.objectness);
  for (const NmsOptions& o : {v5_val, u_val}) EXPECT_TRUE(o.conf_thres == 0.001 && o.multi_label && o.max_det == 300);
  const NmsOptions v5_predict = predict_nms_options(), u_predict = predict_nms_options(true);
  EXPECT_TRUE(v5_predict.iou_thres == 0.45 && v5_predict.max_det == 1000 && v5_predict.objectness);
  EXPECT_TRUE(u_predict.iou_thres == 0.7 && u_predict.max_det == 300 && !u_predict.objectness);
  EXPECT_FALSE(v5_predict.multi_label || u_predict.multi_label);
}

TEST(Nms, UsesFloat32ClassOffsetBoxes) {
  // Two class-79 boxes with raw IoU 1/1.03 = 0.971. Offset by 79*7680, x2 rounds to the 1/16 px grid
  // and the IoU becomes 1.0 > 0.99, so YOLOv5 (and this NMS) suppresses the second box; a per-class
  // NMS on raw boxes would keep both.
  const auto pred = rows({row(0.515f, 0.5f, 1.03f, 1.f, 1.f, 80, 79, 0.9f),
                          row(0.5f, 0.5f, 1.f, 1.f, 1.f, 80, 79, 0.8f)});
  NmsOptions o;
  o.iou_thres = 0.99;
  const auto out = non_max_suppression(pred, o);
  ASSERT_EQ(out[0].size(0), 1);
  EXPECT_FLOAT_EQ(out[0][0][4].item<float>(), 0.9f);
  o.agnostic = true;  // no offset: the raw IoU stays under the threshold
  EXPECT_EQ(non_max_suppression(pred, o)[0].size(0), 2);
}

TEST(Nms, HugeBoxesSuppressAcrossClassesAsInYolov5) {
  // Boxes wider than the 7680 px class offset overlap the next class's offset boxes: YOLOv5 then
  // suppresses across classes. Here IoU = 12320^2 / (2 * 20000^2 - 12320^2) = 0.234 > 0.2.
  const auto pred = rows({row(10000, 10000, 20000, 20000, 1.f, 2, 0, 0.9f),
                          row(10000, 10000, 20000, 20000, 1.f, 2, 1, 0.8f)});
  NmsOptions o;
  o.iou_thres = 0.2;
  EXPECT_EQ(non_max_suppression(pred, o)[0].size(0), 1);
  o.iou_thres = 0.25;
  EXPECT_EQ(non_max_suppression(pred, o)[0].size(0), 2);
}

TEST(Nms, FiltersAreStrictAndClassesSelectable) {
  const auto pred = rows({row(10, 10, 4, 4, 0.5f, 3, 0, 0.5f),    // obj*cls = 0.25: not > 0.25
                          row(30, 30, 4, 4, 0.25f, 3, 1, 1.0f),   // obj = 0.25: not > 0.25
                          row(50, 50, 4, 4, 0.6f, 3, 2, 0.9f),    // kept, class 2
                          row(70, 70, 4, 4, 0.9f, 3, 1, 0.9f)});  // kept, class 1
  NmsOptions o;
  const auto out = non_max_suppression(pred, o)[0];
  ASSERT_EQ(out.size(0), 2);
  EXPECT_EQ(out[0][5].item<float>(), 1.f);  // higher conf first
  EXPECT_EQ(out[1][5].item<float>(), 2.f);
  EXPECT_TRUE(torch::equal(out[1].narrow(0, 0, 4), torch::tensor({48.f, 48.f, 52.f, 52.f})));
  o.classes = {2};
  const auto only2 = non_max_suppression(pred, o)[0];
  ASSERT_EQ(only2.size(0), 1);
  EXPECT_EQ(only2[0][5].item<float>(), 2.f);
}

TEST(Nms, MultiLabelMakesOneCandidatePerClass) {
  auto r = row(20, 20, 10, 10, 1.f, 4, 1, 0.7f);
  r[5 + 3] = 0.6f;
  NmsOptions o;
  o.multi_label = true;
  const auto out = non_max_suppression(rows({r}), o)[0];
  ASSERT_EQ(out.size(0), 2);  // same box, two classes: the class offset keeps them apart
  EXPECT_EQ(out[0][5].item<float>(), 1.f);
  EXPECT_EQ(out[1][5].item<float>(), 3.f);
  o.multi_label = false;
  EXPECT_EQ(non_max_suppression(rows({r}), o)[0].size(0), 1);
}

TEST(Nms, EqualScoresKeepInputOrderAndMaxNmsCaps) {
  const auto pred = rows({row(10, 10, 4, 4, 1.f, 2, 0, 0.5f), row(30, 30, 4, 4, 1.f, 2, 0, 0.5f),
                          row(50, 50, 4, 4, 1.f, 2, 0, 0.7f)});
  NmsOptions o;
  auto out = non_max_suppression(pred, o)[0];
  ASSERT_EQ(out.size(0), 3);
  EXPECT_EQ(out[1][0].item<float>(), 8.f);
  EXPECT_EQ(out[2][0].item<float>(), 28.f);
  o.max_nms = 2;  // only the two best candidates enter NMS
  out = non_max_suppression(pred, o)[0];
  ASSERT_EQ(out.size(0), 2);
  EXPECT_EQ(out[1][0].item<float>(), 8.f);
}

TEST(Nms, EmptyImagesGiveEmptyRows) {
  const auto out = non_max_suppression(torch::zeros({3, 10, 7}), val_nms_options());
  ASSERT_EQ(out.size(), 3u);
  for (const auto& o : out) EXPECT_EQ(o.sizes(), (std::vector<int64_t>{0, 6}));
}

}  // namespace
}  // namespace kestrel
