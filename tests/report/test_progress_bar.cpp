// Progress bar: tqdm's line layout (YOLOv5 bar_format) as a pure function, YOLOv5's training
// columns, and the redraw policy driven by a fake clock.
#include <cstdio>

#include "report/progress_bar.h"
#include "test_support.h"

namespace kestrel {
namespace {

TEST(ProgressBar, FormatInterval) {
  EXPECT_EQ(format_interval(0), "00:00");
  EXPECT_EQ(format_interval(59.9), "00:59");
  EXPECT_EQ(format_interval(61), "01:01");
  EXPECT_EQ(format_interval(3725), "1:02:05");
  EXPECT_EQ(format_interval(36000), "10:00:00");
}

TEST(ProgressBar, FormatMatchesTqdmLayout) {
  EXPECT_EQ(format_progress("D", 4, 8, 2.0, 2.0), "D:  50%|\u2588\u2588\u2588\u2588\u2588     | 4/8 [00:02<00:02,  2.00it/s]");
  // 3/8: 3 full blocks and a 6/8 block; 37.5% rounds half to even; slow items show s/it.
  EXPECT_EQ(format_progress("D", 3, 8, 3725, 0.5),
            "D:  38%|\u2588\u2588\u2588\u258A      | 3/8 [1:02:05<00:10,  2.00s/it]");
  EXPECT_EQ(format_progress("", 0, 8, 0, 0), "  0%|          | 0/8 [00:00<?, ?it/s]");
  EXPECT_EQ(format_progress("x", 8, 8, 12, 123.456), "x: 100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 8/8 [00:12<00:00, 123.46it/s]");
}

TEST(ProgressBar, Yolov5TrainColumns) {
  EXPECT_EQ(train_progress_header(), "      Epoch    GPU_mem   box_loss   obj_loss   cls_loss  Instances       Size");
  EXPECT_EQ(train_progress_header({"box_loss", "cls_loss", "dfl_loss"}),
            "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size");
  EXPECT_EQ(train_progress_desc(0, 3, 0.0, {0.1234, 0.05678, 0.02345}, 123, 320),
            "        0/2         0G     0.1234    0.05678    0.02345        123        320");
  EXPECT_EQ(train_progress_desc(12, 300, 3.4567, {0.123456, 1.5, 0.0}, 12345, 640),
            "     12/299      3.46G     0.1235        1.5          0  1.234e+04        640");
}

// Output captured in memory.
struct Capture {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&buf, &size);
  std::string text() {
    std::fflush(f);
    return std::string(buf, size);
  }
  ~Capture() {
    std::fclose(f);
    std::free(buf);
  }
};

TEST(ProgressBar, PlainOutputPrintsFinalLineOnly) {
  Capture out;
  double t = 100.0;
  int described = 0;
  {
    ProgressBar bar(8, out.f, [&] { return t; }, false);
    for (int i = 0; i < 8; ++i) {
      t += 1.0;
      bar.update(1, [&] {
        ++described;
        return std::string("desc");
      });
    }
  }
  EXPECT_EQ(described, 1);  // only when drawn (10 s interval, or at the end)
  EXPECT_EQ(out.text(), "desc: 100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 8/8 [00:08<00:00,  1.00it/s]\n");
}

TEST(ProgressBar, TerminalRedrawsAtMostTenTimesPerSecond) {
  Capture out;
  double t = 0.0;
  int described = 0;
  ProgressBar bar(64, out.f, [&] { return t; }, true);
  for (int i = 0; i < 64; ++i) {
    t += 1.0 / 64;  // 64 it/s (exact binary steps): a redraw every 7 updates (>= 0.1 s) and at the end
    bar.update(1, [&] {
      ++described;
      return std::string("d");
    });
  }
  EXPECT_EQ(described, 10);
  bar.close();
  bar.close();  // idempotent
  const std::string text = out.text();
  EXPECT_EQ(text.substr(0, 1), "\r");
  const std::string last = "\rd: 100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 64/64 [00:01<00:00, 64.00it/s]\x1b[K\n";
  ASSERT_GE(text.size(), last.size());
  EXPECT_EQ(text.substr(text.size() - last.size()), last);
}

}  // namespace
}  // namespace kestrel
