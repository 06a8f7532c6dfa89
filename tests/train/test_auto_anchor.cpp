// AutoAnchor: the fit metric on sizes worked out by hand, label sizes as check_anchors scales them,
// and the evolution on a dataset the default anchors cannot cover (tall and wide boxes): it must
// raise the best possible recall, keep anchors that already fit, and repeat itself for one seed.
#include "train/auto_anchor.h"

#include <gtest/gtest.h>

namespace kestrel {
namespace {

TEST(AnchorFit, CountsAnchorsWithinTheRatioThreshold) {
  const std::vector<AnchorWH> wh = {{10, 10}, {50, 10}, {20, 20}};
  const std::vector<AnchorWH> anchors = {{10, 10}, {20, 20}};
  // thr 4: worse-side ratios 1/0.5, 0.2/0.4, 0.5/1 -> all labels covered, 5 anchors past 1/4 in all.
  AnchorFit f = anchor_fit(wh, anchors, 4.0);
  EXPECT_DOUBLE_EQ(f.bpr, 1.0);
  EXPECT_NEAR(f.aat, 5.0 / 3.0, 1e-9);
  // thr 2 (strictly above 0.5): only the exact matches of labels 1 and 3 pass.
  f = anchor_fit(wh, anchors, 2.0);
  EXPECT_NEAR(f.bpr, 2.0 / 3.0, 1e-9);
  EXPECT_NEAR(f.aat, 2.0 / 3.0, 1e-9);
}

ImageRecord record(int w, int h, std::vector<Label> labels) {
  ImageRecord r;
  r.image_path = "img.jpg", r.width = w, r.height = h, r.labels = std::move(labels);
  return r;
}

TEST(LabelSizes, ScaleTheLongestSideToTheImageSize) {
  const std::vector<AnchorWH> wh = label_sizes({record(200, 100, {{0, 0.5f, 0.5f, 0.5f, 0.25f}})}, 640, 0);
  ASSERT_EQ(wh.size(), 1u);
  EXPECT_FLOAT_EQ(wh[0][0], 320);  // 0.5 of 640
  EXPECT_FLOAT_EQ(wh[0][1], 80);   // 0.25 of 320
  const std::vector<AnchorWH> jittered = label_sizes({record(200, 100, {{0, 0.5f, 0.5f, 0.5f, 0.25f}})}, 640, 0, 0.9, 1.1);
  EXPECT_GE(jittered[0][0], 288);
  EXPECT_LT(jittered[0][0], 352);
  EXPECT_NEAR(jittered[0][0] / jittered[0][1], 4.0, 1e-4);  // one factor per image
}

// Thin boxes, tall and wide, of several lengths: shapes the COCO anchors do not cover.
std::vector<ImageRecord> thin_boxes() {
  std::vector<ImageRecord> records;
  for (int i = 0; i < 60; ++i) {
    const float len = 0.45f + 0.01f * static_cast<float>(i % 20);
    records.push_back(record(640, 640, {{0, 0.5f, 0.5f, len, 0.02f}, {1, 0.5f, 0.5f, 0.02f, len}}));
  }
  return records;
}

const std::vector<AnchorWH> coco_p3_p5 = {{10, 13}, {16, 30}, {33, 23}, {30, 61}, {62, 45},
                                          {59, 119}, {116, 90}, {156, 198}, {373, 326}};

TEST(AutoAnchor, ReplacesAnchorsThatMissTheLabels) {
  const AutoAnchorResult r = auto_anchor(thin_boxes(), coco_p3_p5, 640, 4.0, 0);
  EXPECT_LT(r.before.bpr, 0.1);  // 290-410 px by 13 px: no COCO anchor within 4x on both sides
  ASSERT_TRUE(r.replaced);
  EXPECT_GT(r.after.bpr, 0.98);
  ASSERT_EQ(r.anchors.size(), coco_p3_p5.size());
  for (size_t i = 1; i < r.anchors.size(); ++i)  // small to large
    EXPECT_LE(r.anchors[i - 1][0] * r.anchors[i - 1][1], r.anchors[i][0] * r.anchors[i][1]);
  EXPECT_NE(r.report.find("poor fit"), std::string::npos);
  const AutoAnchorResult again = auto_anchor(thin_boxes(), coco_p3_p5, 640, 4.0, 0);
  EXPECT_EQ(again.anchors, r.anchors);  // the seed decides every draw
}

TEST(AutoAnchor, KeepsAnchorsThatFit) {
  std::vector<ImageRecord> records;
  for (int i = 0; i < 30; ++i) records.push_back(record(640, 480, {{0, 0.5f, 0.5f, 0.05f, 0.08f}, {0, 0.3f, 0.3f, 0.4f, 0.5f}}));
  const AutoAnchorResult r = auto_anchor(records, coco_p3_p5, 640, 4.0, 0);
  EXPECT_GT(r.before.bpr, 0.98);
  EXPECT_FALSE(r.replaced);
  EXPECT_NE(r.report.find("good fit"), std::string::npos);
}

TEST(AutoAnchor, PlaceholderAnchorsAreAlwaysComputed) {
  std::vector<AnchorWH> placeholder;
  for (int i = 0; i < 9; ++i) placeholder.push_back({static_cast<float>(2 * (i % 3)), static_cast<float>(2 * (i % 3) + 1)});
  const AutoAnchorResult r = auto_anchor(thin_boxes(), placeholder, 640, 4.0, 1, true);
  ASSERT_TRUE(r.replaced);
  EXPECT_EQ(r.anchors.size(), 9u);
  EXPECT_GT(r.after.bpr, r.before.bpr);
}

}  // namespace
}  // namespace kestrel
