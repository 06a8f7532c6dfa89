// NaN triage: when the watch stops a run, what the message says about the batch's labels, and the
// remedies in their order.
#include <gtest/gtest.h>

#include <cmath>

#include "train/divergence.h"

namespace kestrel {
namespace {

TEST(DivergenceWatch, StopsAfterAStreakNotAfterSkipsApart) {
  DivergenceWatch plain(false);
  EXPECT_FALSE(plain.record(false));
  EXPECT_FALSE(plain.record(false));
  EXPECT_FALSE(plain.record(true));  // a good step ends the streak
  EXPECT_FALSE(plain.record(false));
  EXPECT_FALSE(plain.record(false));
  EXPECT_TRUE(plain.record(false));
  EXPECT_EQ(plain.consecutive(), DivergenceWatch::kLimitWithoutScaler);
  EXPECT_EQ(plain.skipped(), 5);

  DivergenceWatch scaled(true);  // fp16: skips while the scale settles are normal
  for (int i = 1; i < DivergenceWatch::kLimitWithScaler; ++i) EXPECT_FALSE(scaled.record(false)) << i;
  EXPECT_TRUE(scaled.record(false));
}

TEST(DivergenceReport, NamesOddLabels) {
  Batch b;
  b.labels = {0, 1, 0.5f, 0.5f, 0.2f, 0.2f,   // fine
              0, 7, 0.5f, 0.5f, 0.2f, 0.2f,   // class 7 of 3
              1, 0, 1.5f, 0.5f, 0.2f, 0.2f,   // centre outside
              1, 2, 0.5f, 0.5f, 0.0f, 0.2f,   // zero width
              1, 2, 0.5f, 0.5f, 1.5f, 0.2f,   // wider than the image
              1, 2, std::nanf(""), 0.5f, 0.1f, 0.2f};
  const std::vector<std::string> notes = odd_label_notes(b, 3);
  ASSERT_EQ(notes.size(), 5u);
  EXPECT_EQ(notes[0], "1 label with inf/NaN values");
  EXPECT_EQ(notes[1], "1 label with a class outside 0..2");
  EXPECT_EQ(notes[2], "1 label centred outside the image");
  EXPECT_EQ(notes[3], "1 label of zero or negative width/height");
  EXPECT_EQ(notes[4], "1 label wider or taller than the image");
  b.labels.resize(6);
  EXPECT_TRUE(odd_label_notes(b, 3).empty());
}

TEST(DivergenceReport, MessageSaysWhereAndWhatToTryInOrder) {
  DivergenceReport r;
  r.epoch = 2, r.batch = 5, r.step = 45, r.consecutive = 3, r.precision = "bf16", r.lr0 = 0.01;
  r.data = "mine.yaml", r.label_notes = {"2 labels centred outside the image"}, r.images = {"a.jpg", "b.jpg"};
  const std::string m = divergence_message(r);
  EXPECT_NE(m.find("3 optimizer steps in a row, last at epoch 2, batch 5 (step 45)"), std::string::npos) << m;
  EXPECT_NE(m.find("labels of that batch: 2 labels centred outside the image"), std::string::npos) << m;
  EXPECT_NE(m.find("its images: a.jpg b.jpg"), std::string::npos) << m;
  const size_t lr = m.find("lr0: 0.001"), scan = m.find("kestrel scan --data mine.yaml"), amp = m.find("--amp off");
  ASSERT_NE(lr, std::string::npos) << m;
  ASSERT_NE(scan, std::string::npos) << m;
  ASSERT_NE(amp, std::string::npos) << m;
  EXPECT_LT(lr, scan);
  EXPECT_LT(scan, amp);

  r.precision = "fp16", r.scaler = true, r.scale = 0.0039;
  EXPECT_NE(divergence_message(r).find("fp16 loss scaler: every one of those steps was skipped; the scale fell to 0.0039"),
            std::string::npos);
  r.precision = "fp32", r.scaler = false, r.label_notes.clear();
  const std::string plain = divergence_message(r);
  EXPECT_NE(plain.find("labels of that batch: nothing odd"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("--amp off"), std::string::npos) << plain;  // no AMP to turn off
}

}  // namespace
}  // namespace kestrel
