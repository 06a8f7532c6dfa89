// Tests for eval/boxes: box_iou against YOLOv5's reference, format conversions, letterbox rescaling.
#include "eval/boxes.h"

#include "torch_support.h"

namespace kestrel {
namespace {

using test::json_tensor;
using test::reference;

TEST(BoxIou, MatchesYolov5Pairwise) {
  const auto& ref = reference("boxes_iou.json").at("box_iou");
  const auto iou = box_iou(json_tensor(ref.at("box1")), json_tensor(ref.at("box2")));
  const auto expected = json_tensor(ref.at("iou"));
  ASSERT_EQ(iou.sizes(), expected.sizes());
  EXPECT_LE((iou - expected).abs().max().item<float>(), 1e-6f);
}

TEST(BoxIou, MatchesProcessBatchDiagnostic) {
  // The process_batch file records box_iou(labels, detections) for two more box sets.
  for (const auto& c : reference("metrics_process_batch.json").at("cases")) {
    const auto det = json_tensor(c.at("inputs").at("detections"));
    const auto lab = json_tensor(c.at("inputs").at("labels"));
    const auto iou = box_iou(lab.narrow(1, 1, 4), det.narrow(1, 0, 4));
    const auto expected = json_tensor(c.at("outputs").at("iou_labels_x_detections"));
    EXPECT_TRUE(torch::equal(iou, expected)) << (iou - expected).abs().max().item<float>();
  }
}

TEST(BoxFormats, ConvertBothWays) {
  const auto xywh = torch::tensor({{10.f, 20.f, 4.f, 6.f}, {0.5f, 0.5f, 1.f, 0.25f}});
  const auto xyxy = xywh2xyxy(xywh);
  EXPECT_TRUE(torch::equal(xyxy, torch::tensor({{8.f, 17.f, 12.f, 23.f}, {0.f, 0.375f, 1.f, 0.625f}})));
  EXPECT_TRUE(torch::equal(xyxy2xywh(xyxy), xywh));
  EXPECT_TRUE(torch::equal(xywh2xyxy(xywh.unsqueeze(0)).squeeze(0), xyxy));  // [..., 4] shapes
}

TEST(ScaleBoxes, UndoesLetterboxThenClips) {
  // 480x640 (h x w) image letterboxed into 320x320: ratio 0.5, 40 px of padding top and bottom.
  LetterboxInfo lb;
  lb.orig_h = 480, lb.orig_w = 640, lb.ratio_h = lb.ratio_w = 0.5, lb.pad_w = 0, lb.pad_h = 40;
  auto boxes = torch::tensor({{10.f, 50.f, 100.f, 100.f, 0.9f, 3.f}, {-5.f, 30.f, 330.f, 290.f, 0.5f, 1.f}});
  scale_boxes(boxes, lb);
  EXPECT_TRUE(torch::equal(boxes, torch::tensor({{20.f, 20.f, 200.f, 120.f, 0.9f, 3.f},
                                                 {0.f, 0.f, 640.f, 480.f, 0.5f, 1.f}})));
  // Without recorded geometry the same gain and padding are derived from the sizes.
  auto derived = torch::tensor({{10.f, 50.f, 100.f, 100.f}});
  scale_boxes(derived, 320, 320, 480, 640);
  EXPECT_TRUE(torch::equal(derived, torch::tensor({{20.f, 20.f, 200.f, 120.f}})));
}

TEST(ScaleBoxes, UltralyticsGeometryMapsEachAxisWithItsOwnGain) {
  // 427x640 loaded at 320 is 213x320: gains 213/427 (y) and 0.5 (x). YOLOv5's ratio_pad path divides both
  // axes by the height's gain; Ultralytics' by each axis's own.
  LetterboxInfo lb;
  lb.orig_h = 427, lb.orig_w = 640, lb.ratio_h = 213.0 / 427, lb.ratio_w = 0.5, lb.pad_w = 0, lb.pad_h = 53;
  auto yolov5 = torch::tensor({{100.f, 53.f, 300.f, 266.f}});
  auto ultralytics = yolov5.clone();
  scale_boxes(yolov5, lb);
  lb.gain_per_axis = true;
  scale_boxes(ultralytics, lb);
  const float gain_h = static_cast<float>(213.0 / 427);
  EXPECT_FLOAT_EQ(yolov5[0][0].item<float>(), 100.f / gain_h);
  EXPECT_FLOAT_EQ(ultralytics[0][0].item<float>(), 200.f);
  EXPECT_FLOAT_EQ(ultralytics[0][2].item<float>(), 600.f);
  EXPECT_FLOAT_EQ(ultralytics[0][1].item<float>(), 0.f);
  EXPECT_FLOAT_EQ(ultralytics[0][3].item<float>(), 213.f / gain_h);
}

TEST(ClipBoxes, ClampsToImage) {
  auto boxes = torch::tensor({{-1.f, -2.f, 700.f, 500.f}, {5.f, 6.f, 7.f, 8.f}});
  clip_boxes(boxes, 480, 640);
  EXPECT_TRUE(torch::equal(boxes, torch::tensor({{0.f, 0.f, 640.f, 480.f}, {5.f, 6.f, 7.f, 8.f}})));
}

}  // namespace
}  // namespace kestrel
