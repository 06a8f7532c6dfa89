// load_mosaic + the rest of __getitem__ against YOLOv5's recorded run on coco128 (augment_mosaic.json):
// every draw is fed in; placement, labels, matrices and pixels are compared at each stage, then the
// direct path (no canvas, flips folded into the warp, HSV in strips) must give the same bytes and labels.
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "data/augment/augment.h"
#include "data/augment/hsv.h"
#include "data/augment/mosaic.h"
#include "pixel_summary.h"
#include "test_support.h"

namespace kestrel {
namespace {

using test::json_doubles;
using test::json_floats;

const nlohmann::json& ref() { return test::reference("augment_mosaic.json"); }

std::vector<Label> json_labels(const nlohmann::json& t) {  // rows of class, x, y, w, h
  const auto v = json_floats(t);
  std::vector<Label> out;
  for (size_t i = 0; i + 4 < v.size(); i += 5) out.push_back({v[i], v[i + 1], v[i + 2], v[i + 3], v[i + 4]});
  return out;
}

// Exact equality of float32 box rows (class + 4 coordinates) with a reference [n, 5] tensor.
void expect_boxes(const std::vector<BoxLabel>& got, const nlohmann::json& t, const std::string& what) {
  const auto v = json_floats(t);
  ASSERT_EQ(got.size() * 5, v.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const float g[5] = {got[i].cls, got[i].x1, got[i].y1, got[i].x2, got[i].y2};
    for (int k = 0; k < 5; ++k) EXPECT_EQ(g[k], v[i * 5 + k]) << what << " row " << i << " col " << k;
  }
}

// The xyxy / xywhn columns 1..4 of a reference [n, 4] tensor.
void expect_columns(const float* row, size_t stride, size_t n, const nlohmann::json& t, const std::string& what) {
  const auto v = json_floats(t);
  ASSERT_EQ(n * 4, v.size()) << what;
  for (size_t i = 0; i < n; ++i)
    for (int k = 0; k < 4; ++k) EXPECT_EQ(row[i * stride + k], v[i * 4 + k]) << what << " row " << i << " col " << k;
}

void expect_labels_out(const std::vector<Label>& got, const nlohmann::json& t) {
  const auto v = json_floats(t);
  ASSERT_EQ(got.size() * 6, v.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const float g[5] = {got[i].cls, got[i].x, got[i].y, got[i].w, got[i].h};
    EXPECT_EQ(v[i * 6], 0.f);
    for (int k = 0; k < 5; ++k) EXPECT_EQ(g[k], v[i * 6 + 1 + k]) << "labels_out row " << i << " col " << k;
  }
}

// load_image for training: full-size decode (cv::imread, as YOLOv5) and resize to long side s, linear.
cv::Mat load_tile(const std::string& dir, const std::string& file, int s) {
  const cv::Mat full = cv::imread(dir + "/" + file, cv::IMREAD_COLOR);
  const double r = double(s) / std::max(full.rows, full.cols);
  if (r == 1) return full;
  cv::Mat out;
  cv::resize(full, out, cv::Size(int(full.cols * r), int(full.rows * r)), 0, 0, cv::INTER_LINEAR);
  return out;
}

struct MosaicCase {
  MosaicDraws draws;
  std::array<MosaicTile, 4> tiles;
  std::array<std::vector<Label>, 4> tile_labels;
  HsvGains hsv;
  bool flip_ud = false, flip_lr = false;
};

MosaicCase read_case(const nlohmann::json& c, const std::string& dir, int s) {
  MosaicCase mc;
  const auto& lm = c.at("load_mosaic");
  const auto& draws = c.at("draws");
  mc.draws.yc = lm.at("yc");
  mc.draws.xc = lm.at("xc");
  for (int k = 0; k < 4; ++k) mc.draws.indices[k] = lm.at("indices")[k];
  std::vector<double> pd;
  for (int i = 5; i <= 12; ++i) pd.push_back(draws.at(i).at("value"));
  mc.draws.perspective = {pd[0], pd[1], pd[2], pd[3], pd[4], pd[5], pd[6], pd[7]};
  for (int k = 0; k < 4; ++k) {
    const auto& t = lm.at("tiles")[k];
    mc.tile_labels[k] = json_labels(t.at("labels_normalized"));
    mc.tiles[k] = {load_tile(dir, t.at("file"), s), &mc.tile_labels[k]};
  }
  const auto& hyp = ref().at("hyp");
  double u[3];
  for (int i = 0; i < 3; ++i) u[i] = c.at("hsv").at("u")[i];
  mc.hsv = hsv_gains_from_u(u, hyp.at("hsv_h"), hyp.at("hsv_s"), hyp.at("hsv_v"));
  mc.flip_ud = c.at("flipud").at("flip");
  mc.flip_lr = c.at("fliplr").at("flip");
  return mc;
}

PerspectiveParams mosaic_params() {
  const auto& h = ref().at("hyp");
  return {h.at("degrees"), h.at("translate"), h.at("scale"), h.at("shear"), h.at("perspective")};
}

// HWC BGR -> CHW RGB bytes, as __getitem__ returns the tensor.
std::string chw_rgb_sha256(const cv::Mat& img) {
  std::vector<uint8_t> chw(img.total() * 3);
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < img.rows; ++y)
      for (int x = 0; x < img.cols; ++x)
        chw[(size_t(c) * img.rows + y) * img.cols + x] = img.ptr<uint8_t>(y)[x * 3 + (2 - c)];
  return test::sha256_hex(chw.data(), chw.size());
}

TEST(AugmentMosaic, DrawOrderMatchesYolov5Semantics) {
  // Our generator cannot replay Python's, but the recorded units map to the values the same way.
  for (const auto& c : ref().at("cases")) {
    const auto& d = c.at("draws");
    const int yc = int(160 + (480 - 160) * d[1].at("unit")[0].get<double>());
    EXPECT_EQ(yc, c.at("load_mosaic").at("yc").get<int>());
    for (int k = 0; k < 3; ++k)
      EXPECT_EQ(int(d[3].at("unit")[k].get<double>() * 128), d[3].at("value")[k].get<int>());
  }
  SampleRng rng(3, 1, 4);
  const MosaicDraws md = draw_mosaic(rng, 7, 128, 320, mosaic_params());
  EXPECT_GE(md.yc, 160);
  EXPECT_LT(md.yc, 480);
  int own = 0;
  for (size_t i : md.indices) {
    EXPECT_LT(i, 128u);
    own += i == 7;
  }
  EXPECT_GE(own, 1);
}

TEST(AugmentMosaic, EveryStageMatchesYolov5OnCoco128) {
  KESTREL_REQUIRE_SHARED(dir, "data/coco128/images/train2017");
  const int s = ref().at("dataset").at("img_size");
  const PerspectiveParams p = mosaic_params();
  for (const auto& c : ref().at("cases")) {
    SCOPED_TRACE("seed " + std::to_string(c.at("seed").get<int>()));
    MosaicCase mc = read_case(c, dir, s);
    const auto& lm = c.at("load_mosaic");

    // Tiles and their placement.
    std::array<cv::Size, 4> sizes;
    for (int k = 0; k < 4; ++k) {
      const auto& t = lm.at("tiles")[k];
      test::expect_pixel_summary(mc.tiles[k].image, t.at("image_summary"), "tile " + std::to_string(k));
      sizes[k] = mc.tiles[k].image.size();
    }
    const auto layout = mosaic_layout(s, mc.draws.xc, mc.draws.yc, sizes);
    for (int k = 0; k < 4; ++k) {
      const auto& t = lm.at("tiles")[k];
      const TilePlacement& pl = layout[k];
      EXPECT_EQ(std::vector<int>({pl.x1a, pl.y1a, pl.x2a, pl.y2a}), t.at("a_x1y1x2y2").get<std::vector<int>>());
      EXPECT_EQ(std::vector<int>({pl.x1b, pl.y1b, pl.x2b, pl.y2b}), t.at("b_x1y1x2y2").get<std::vector<int>>());
      EXPECT_EQ(std::vector<int>({pl.padw(), pl.padh()}), t.at("padw_padh").get<std::vector<int>>());
      std::vector<BoxLabel> placed;
      xywhn_to_xyxy(mc.tile_labels[k], float(sizes[k].width), float(sizes[k].height), float(pl.padw()),
                    float(pl.padh()), placed);
      expect_boxes(placed, t.at("labels_placed"), "labels_placed " + std::to_string(k));
    }
    std::vector<BoxLabel> labels4;
    mosaic_labels(mc.tiles, layout, s, labels4);
    expect_boxes(labels4, lm.at("labels4_clipped"), "labels4_clipped");
    cv::Mat canvas;
    mosaic_canvas(mc.tiles, layout, s, canvas);
    test::expect_pixel_summary(canvas, lm.at("canvas"), "canvas");

    // random_perspective on the canvas.
    const auto& rp = c.at("random_perspective");
    cv::Mat img;
    std::vector<BoxLabel> boxes;
    PerspectiveTrace trace;
    mosaic_on_canvas(mc.tiles, mc.draws, s, p, img, boxes, &trace);
    const auto M = json_doubles(rp.at("M"));
    for (int i = 0; i < 9; ++i) EXPECT_NEAR(trace.matrices.M.val[i], M[i], 1e-15 * std::max(1.0, std::abs(M[i])));
    const auto want_boxes = json_doubles(rp.at("boxes_transformed_clipped"));
    ASSERT_EQ(trace.boxes.size(), want_boxes.size());
    for (size_t i = 0; i < want_boxes.size(); ++i) EXPECT_NEAR(trace.boxes[i], want_boxes[i], 1e-9);
    const auto kept = json_doubles(rp.at("kept"));
    ASSERT_EQ(trace.kept.size(), kept.size());
    for (size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(trace.kept[i], kept[i]);
    expect_boxes(boxes, rp.at("labels_out"), "random_perspective labels_out");
    test::expect_pixel_summary(img, rp.at("image_out"), "random_perspective image_out");

    // xyxy2xywhn (clip in place), HSV, flips.
    std::vector<BoxLabel> clipped = boxes;
    std::vector<Label> labels;
    xyxy_to_xywhn(clipped, img.cols, img.rows, labels);
    const auto& xn = c.at("xyxy2xywhn");
    expect_columns(&clipped[0].x1, 5, clipped.size(), xn.at("labels_clipped_in_place_xyxy"), "clipped xyxy");
    expect_columns(&labels[0].x, 5, labels.size(), xn.at("labels_out_xywhn"), "xywhn");
    for (int i = 0; i < 3; ++i) EXPECT_EQ(mc.hsv.r[i], c.at("hsv").at("r")[i].get<double>());
    augment_hsv(img, mc.hsv);
    test::expect_pixel_summary(img, c.at("hsv").at("image_after"), "hsv image_after");
    if (mc.flip_ud) {
      cv::flip(img, img, 0);
      flip_labels_ud(labels);
    }
    if (mc.flip_lr) {
      cv::flip(img, img, 1);
      flip_labels_lr(labels);
    }
    expect_labels_out(labels, c.at("labels_out"));
    test::expect_pixel_summary(img, c.at("image_out"), "image_out");
    EXPECT_EQ(chw_rgb_sha256(img), c.at("image_out").at("tensor_sha256").get<std::string>());

    // Direct path: same draws, no canvas, flips folded into the warp, HSV in strips.
    cv::Mat direct;
    std::vector<BoxLabel> direct_boxes;
    mosaic_direct(mc.tiles, mc.draws, s, p, mc.flip_lr, mc.flip_ud, direct, direct_boxes);
    std::vector<Label> direct_labels;
    xyxy_to_xywhn(direct_boxes, direct.cols, direct.rows, direct_labels);
    augment_hsv_strips(direct, mc.hsv);
    if (mc.flip_ud) flip_labels_ud(direct_labels);
    if (mc.flip_lr) flip_labels_lr(direct_labels);
    expect_labels_out(direct_labels, c.at("labels_out"));
    test::expect_pixel_summary(direct, c.at("image_out"), "direct image_out");
  }
}

}  // namespace
}  // namespace kestrel
