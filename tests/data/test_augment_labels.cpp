// The labels a training sample hands over, in Ultralytics' arithmetic: RandomFlip and Format on the
// warp's pixel corners (ultralytics/augment_labels.json, the four flip combinations), against
// xyxy_to_xywhn_flipped, float32 for float32.
#include <gtest/gtest.h>

#include "data/augment/augment.h"
#include "test_support.h"

namespace kestrel {
namespace {

TEST(AugmentLabels, FlippedConversionMatchesUltralyticsFormat) {
  const nlohmann::json& ref = test::reference("ultralytics/augment_labels.json");
  const int h = ref.at("image_hw")[0], w = ref.at("image_hw")[1];
  const auto corners = test::json_floats(ref.at("boxes"));
  std::vector<BoxLabel> boxes;
  for (size_t i = 0; i < corners.size(); i += 4) boxes.push_back({0, corners[i], corners[i + 1], corners[i + 2], corners[i + 3]});
  for (const auto& c : ref.at("cases")) {
    const bool flip_ud = c.at("flip_ud"), flip_lr = c.at("flip_lr");
    SCOPED_TRACE(std::string("flip_ud ") + (flip_ud ? "1" : "0") + ", flip_lr " + (flip_lr ? "1" : "0"));
    std::vector<Label> labels;
    xyxy_to_xywhn_flipped(boxes, w, h, flip_lr, flip_ud, labels);
    const auto want = test::json_floats(c.at("labels"));
    ASSERT_EQ(labels.size() * 4, want.size());
    for (size_t i = 0; i < labels.size(); ++i) {
      EXPECT_EQ(labels[i].x, want[4 * i]) << "row " << i;
      EXPECT_EQ(labels[i].y, want[4 * i + 1]) << "row " << i;
      EXPECT_EQ(labels[i].w, want[4 * i + 2]) << "row " << i;
      EXPECT_EQ(labels[i].h, want[4 * i + 3]) << "row " << i;
    }
  }
}

// YOLOv5's way gives other bits: it clips 0.001 px inside the image (in place) and flips as 1 - x.
TEST(AugmentLabels, Yolov5ConversionDiffersOnTheEdges) {
  const std::vector<BoxLabel> whole_image = {{0, 0, 0, 64, 48}};
  std::vector<BoxLabel> clipped = whole_image;
  std::vector<Label> yolov5, ultralytics;
  xyxy_to_xywhn(clipped, 64, 48, yolov5);
  xyxy_to_xywhn_flipped(whole_image, 64, 48, false, false, ultralytics);
  EXPECT_EQ(ultralytics[0].w, 1.f);
  EXPECT_LT(yolov5[0].w, 1.f);
}

}  // namespace
}  // namespace kestrel
