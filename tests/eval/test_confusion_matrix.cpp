// ConfusionMatrix against cases worked out by hand from YOLOv5 v7.0's rules: the confidence cut,
// one pair per label and per detection (highest IoU first), missed labels in the background row, and
// stray detections in the background column only when the image had some match.
#include "eval/confusion_matrix.h"

#include "torch_support.h"

namespace kestrel {
namespace {

torch::Tensor rows(std::vector<std::vector<float>> r) {
  torch::Tensor t = torch::empty({static_cast<int64_t>(r.size()), static_cast<int64_t>(r.empty() ? 0 : r[0].size())});
  for (size_t i = 0; i < r.size(); ++i)
    for (size_t j = 0; j < r[i].size(); ++j) t[i][j] = r[i][j];
  return t;
}

TEST(ConfusionMatrix, CountsMatchesConfusionsMissesAndStrays) {
  ConfusionMatrix cm(2);
  const torch::Tensor labels = rows({{0, 0, 0, 10, 10}, {1, 20, 20, 30, 30}, {1, 50, 50, 60, 60}});
  const torch::Tensor dets = rows({
      {0, 0, 10, 10, 0.9f, 0},      // on label 0, right class
      {20, 20, 30, 30, 0.8f, 0},    // on label 1, wrong class
      {80, 80, 90, 90, 0.7f, 1},    // on nothing: a stray detection
      {50, 50, 60, 60, 0.1f, 1},    // on label 2 but under conf 0.25: ignored, so label 2 is missed
  });
  cm.process_batch(dets, labels);
  EXPECT_EQ(cm.at(0, 0), 1);
  EXPECT_EQ(cm.at(0, 1), 1);
  EXPECT_EQ(cm.at(1, 2), 1);  // [detected class 1][background]
  EXPECT_EQ(cm.at(2, 1), 1);  // [background][true class 1]
  double total = 0;
  for (double v : cm.matrix()) total += v;
  EXPECT_EQ(total, 4);
  EXPECT_EQ(cm.matrix().size(), 9u);
}

TEST(ConfusionMatrix, DuplicateDetectionsKeepTheBestOverlap) {
  ConfusionMatrix cm(1);
  const torch::Tensor labels = rows({{0, 0, 0, 10, 10}});
  // The second detection overlaps better (IoU 1 vs 0.81); the first becomes a stray.
  cm.process_batch(rows({{0, 0, 9, 9, 0.9f, 0}, {0, 0, 10, 10, 0.5f, 0}}), labels);
  EXPECT_EQ(cm.at(0, 0), 1);
  EXPECT_EQ(cm.at(0, 1), 1);
  EXPECT_EQ(cm.at(1, 0), 0);
}

TEST(ConfusionMatrix, StraysWithoutAnyMatchAreNotCounted) {
  // v7.0 only counts unmatched detections when the image had at least one pair.
  ConfusionMatrix cm(3);
  cm.process_batch(rows({{100, 100, 110, 110, 0.9f, 2}}), rows({{1, 0, 0, 10, 10}}));
  EXPECT_EQ(cm.at(3, 1), 1);
  EXPECT_EQ(cm.at(2, 3), 0);
  cm.add_missed(torch::tensor({0.0f, 0.0f, 2.0f}));
  EXPECT_EQ(cm.at(3, 0), 2);
  EXPECT_EQ(cm.at(3, 2), 1);
}

TEST(ConfusionMatrix, LowOverlapIsAMissAndAStray) {
  ConfusionMatrix cm(1);
  // IoU 25/175 < 0.45, but a second pair in the image matches, so the stray is counted.
  cm.process_batch(rows({{5, 5, 15, 15, 0.9f, 0}, {40, 40, 50, 50, 0.9f, 0}}),
                   rows({{0, 0, 0, 10, 10}, {0, 40, 40, 50, 50}}));
  EXPECT_EQ(cm.at(0, 0), 1);
  EXPECT_EQ(cm.at(1, 0), 1);
  EXPECT_EQ(cm.at(0, 1), 1);
}

}  // namespace
}  // namespace kestrel
