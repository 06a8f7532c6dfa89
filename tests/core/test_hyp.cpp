// hyp.yaml reading over each family's defaults: YOLOv5's scratch-low values, Ultralytics' gains, a
// user's keys on top, and a clear error naming the file and line for what cannot be used.
#include "core/hyp.h"

#include <fstream>

#include "test_support.h"

namespace kestrel {
namespace {

std::string write_hyp(const std::string& text) {
  const std::string path = test::temp_dir("hyp") + "/hyp.yaml";
  std::ofstream(path) << text;
  return path;
}

TEST(Hyp, UltralyticsDefaultsDifferFromYolov5OnlyInTheGains) {
  const Hyp v5, u = ultralytics_hyp();
  EXPECT_EQ(v5.box, 0.05);
  EXPECT_EQ(u.box, 7.5);
  EXPECT_EQ(u.cls, 0.5);
  EXPECT_EQ(u.dfl, 1.5);
  // cfg/default.yaml's schedule and augmentation equal hyp.scratch-low's.
  EXPECT_TRUE(u.lr0 == v5.lr0 && u.lrf == v5.lrf && u.momentum == v5.momentum && u.weight_decay == v5.weight_decay);
  EXPECT_TRUE(u.warmup_epochs == v5.warmup_epochs && u.warmup_momentum == v5.warmup_momentum && u.warmup_bias_lr == v5.warmup_bias_lr);
  EXPECT_TRUE(u.hsv_h == v5.hsv_h && u.hsv_s == v5.hsv_s && u.hsv_v == v5.hsv_v && u.translate == v5.translate &&
              u.scale == v5.scale && u.fliplr == v5.fliplr && u.mosaic == v5.mosaic && u.mixup == v5.mixup);
}

TEST(Hyp, FileKeysOverTheBase) {
  const Hyp h = load_hyp(write_hyp("dfl: 2.0\nbox: 5\n"), ultralytics_hyp());
  EXPECT_EQ(h.dfl, 2.0);
  EXPECT_EQ(h.box, 5.0);
  EXPECT_EQ(h.cls, 0.5);  // kept from the base
  EXPECT_EQ(load_hyp(write_hyp("lr0: 0.02\n")).box, 0.05);  // YOLOv5's base by default
}

TEST(Hyp, BadKeyOrValueNamesFileAndLine) {
  const std::string unknown = write_hyp("box: 7.5\nbogus: 1\n");
  try {
    load_hyp(unknown);
    FAIL() << "an unknown key must throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(unknown + ":2: unknown hyp key 'bogus'"), std::string::npos) << e.what();
  }
  const std::string text = write_hyp("dfl: lots\n");
  try {
    load_hyp(text);
    FAIL() << "a non-number must throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(text + ":1: hyp 'dfl' is not a number"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kestrel
