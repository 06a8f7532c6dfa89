// random_perspective and box_candidates against YOLOv5's recorded draws and results
// (augment_perspective.json, box_candidates of boxes_letterbox_candidates.json), and in float32
// against Ultralytics' RandomPerspective (ultralytics/augment_perspective.json).
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "data/augment/perspective.h"
#include "data/augment/warp_pieces.h"
#include "pixel_summary.h"
#include "test_support.h"

namespace kestrel {
namespace {

using test::json_doubles;
using test::json_image;

const nlohmann::json& ref() { return test::reference("augment_perspective.json"); }

std::vector<BoxLabel> json_boxes(const nlohmann::json& t) {
  const auto v = test::json_floats(t);
  std::vector<BoxLabel> out;
  for (size_t i = 0; i + 4 < v.size(); i += 5) out.push_back({v[i], v[i + 1], v[i + 2], v[i + 3], v[i + 4]});
  return out;
}

PerspectiveDraws case_draws(const nlohmann::json& c) {
  std::vector<double> v;
  for (const auto& d : c.at("draws")) v.push_back(d.at("value").get<double>());
  return {v.at(0), v.at(1), v.at(2), v.at(3), v.at(4), v.at(5), v.at(6), v.at(7)};
}

PerspectiveParams case_params(const nlohmann::json& c) {
  const auto& p = c.at("params");
  return {p.at("degrees"), p.at("translate"), p.at("scale"), p.at("shear"), p.at("perspective")};
}

cv::Mat case_input(const nlohmann::json& c) {
  return json_image(ref().at(c.at("input").get<std::string>() == "small64" ? "small64" : "image").at("pixels"));
}

void expect_matrix(const cv::Matx33d& m, const nlohmann::json& t, double rel, const char* name) {
  const auto v = json_doubles(t);
  for (int i = 0; i < 9; ++i) {
    if (rel == 0)
      EXPECT_EQ(m.val[i], v[i]) << name << "[" << i << "]";
    else
      EXPECT_NEAR(m.val[i], v[i], rel * std::max(1.0, std::abs(v[i]))) << name << "[" << i << "]";
  }
}

TEST(AugmentPerspective, DrawsMatrixBoxesAndPixelsMatchYolov5) {
  for (const auto& c : ref().at("cases")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const cv::Mat in = case_input(c);
    const auto border = c.at("border").get<std::vector<int>>();
    const PerspectiveParams p = case_params(c);
    const PerspectiveDraws d = case_draws(c);
    // The recorded draws are uniform(low, high) = low + (high-low)*unit; ours give the same from the units.
    for (const auto& dr : c.at("draws")) {
      const double lo = dr.at("args")[0], hi = dr.at("args")[1], u = dr.at("unit");
      EXPECT_EQ(lo + (hi - lo) * u, dr.at("value").get<double>());
    }
    std::vector<BoxLabel> labels = json_boxes(c.at("labels_in"));
    cv::Mat out;
    PerspectiveTrace trace;
    random_perspective(in, labels, p, d, in.cols + 2 * border[1], in.rows + 2 * border[0], out, &trace);

    expect_matrix(trace.matrices.C, c.at("C"), 0, "C");
    expect_matrix(trace.matrices.P, c.at("P"), 0, "P");
    expect_matrix(trace.matrices.R, c.at("R"), 0, "R");
    expect_matrix(trace.matrices.S, c.at("S"), 0, "S");
    expect_matrix(trace.matrices.T, c.at("T"), 0, "T");
    expect_matrix(trace.matrices.M, c.at("M"), 1e-15, "M");

    const auto boxes = json_doubles(c.at("boxes_transformed_clipped"));
    ASSERT_EQ(trace.boxes.size(), boxes.size());
    for (size_t i = 0; i < boxes.size(); ++i) EXPECT_NEAR(trace.boxes[i], boxes[i], 1e-9) << "box value " << i;
    const auto kept = json_doubles(c.at("kept"));
    ASSERT_EQ(trace.kept.size(), kept.size());
    for (size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(trace.kept[i], kept[i]);
    const auto want = json_boxes(c.at("labels_out"));
    ASSERT_EQ(labels.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(labels[i].cls, want[i].cls);
      EXPECT_NEAR(labels[i].x1, want[i].x1, 1e-4);
      EXPECT_NEAR(labels[i].y1, want[i].y1, 1e-4);
      EXPECT_NEAR(labels[i].x2, want[i].x2, 1e-4);
      EXPECT_NEAR(labels[i].y2, want[i].y2, 1e-4);
    }

    const auto& img_ref = c.at("image_out");
    if (img_ref.contains("data"))
      EXPECT_EQ(cv::norm(out, json_image(img_ref), cv::NORM_INF), 0) << "full output pixels";
    else
      test::expect_pixel_summary(out, img_ref, "image_out");

    // The canvas-free warp gives the same bytes for the affine cases, flipped or not.
    if (p.perspective == 0) {
      PieceCanvas canvas;
      canvas.piece[0] = in;
      const cv::Matx23d M(trace.matrices.M.val);
      for (int flips = 0; flips < 4; ++flips) {
        const bool lr = flips & 1, ud = flips & 2;
        cv::Mat direct, want_img = out.clone();
        warp_affine_pieces(canvas, M, out.cols, out.rows, lr, ud, direct);
        if (lr) cv::flip(want_img, want_img, 1);
        if (ud) cv::flip(want_img, want_img, 0);
        EXPECT_EQ(cv::norm(direct, want_img, cv::NORM_INF), 0) << "warp_affine_pieces, flips " << flips;
      }
    }
  }
}

// make_vectors.py's `pattern`: a deterministic image both sides compute.
cv::Mat pattern(int h, int w) {
  cv::Mat img(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) img.at<cv::Vec3b>(y, x)[c] = static_cast<uint8_t>((x * 37 + y * 91 + c * 53 + (x * y) % 17) % 256);
  return img;
}

// Ultralytics builds the matrices, moves the corners and judges the boxes in float32: given its eight
// draws, its matrix bit for bit, its output bytes, and the boxes it keeps, each float32 the same.
TEST(AugmentPerspective, Float32PathMatchesUltralytics) {
  for (const auto& c : test::reference("ultralytics/augment_perspective.json").at("cases")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const auto& hyp = c.at("hyp");
    PerspectiveParams p{hyp.value("degrees", 0.0), hyp.value("translate", 0.0), hyp.value("scale", 0.0),
                        hyp.value("shear", 0.0), hyp.value("perspective", 0.0), /*float32=*/true};
    const auto v = c.at("draws").get<std::vector<double>>();
    const PerspectiveDraws d{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
    const cv::Mat img = pattern(c.at("image_hw")[0], c.at("image_hw")[1]);
    const auto corners = test::json_floats(c.at("boxes"));
    std::vector<BoxLabel> labels;
    for (size_t i = 0; i < corners.size(); i += 4)
      labels.push_back({float(i / 4), corners[i], corners[i + 1], corners[i + 2], corners[i + 3]});
    const int out_w = c.at("size_wh")[0], out_h = c.at("size_wh")[1];
    cv::Mat out;
    PerspectiveTrace trace;
    random_perspective(img, labels, p, d, out_w, out_h, out, &trace);
    const auto M = c.at("M").get<std::vector<double>>();
    for (int i = 0; i < 9; ++i) EXPECT_EQ(trace.matrices.M.val[i], M[i]) << "M[" << i << "]";
    ASSERT_EQ(out.rows, out_h);
    ASSERT_EQ(out.cols, out_w);
    EXPECT_EQ(test::sha256_hex(out.data, out.total() * out.elemSize()), c.at("out_sha256").get<std::string>());
    const auto kept = c.at("kept").get<std::vector<int>>();
    const auto want = test::json_floats(c.at("boxes_out"));
    ASSERT_EQ(labels.size(), kept.size());
    for (size_t i = 0; i < kept.size(); ++i) {
      EXPECT_EQ(labels[i].cls, kept[i]);
      const float got[4] = {labels[i].x1, labels[i].y1, labels[i].x2, labels[i].y2};
      for (int k = 0; k < 4; ++k) EXPECT_EQ(got[k], want[4 * i + k]) << "box " << kept[i] << " coordinate " << k;
    }
  }
}

TEST(AugmentPerspective, DrawsAllEightInOrder) {
  SampleRng a(5, 0, 1), b(5, 0, 1);
  const PerspectiveParams p{0, 0.1, 0.5, 0, 0};  // zero ranges still consume their draws
  const PerspectiveDraws d = draw_perspective(a, p);
  for (int i = 0; i < 3; ++i) b.random();
  EXPECT_EQ(d.p20, 0.0);
  EXPECT_EQ(d.angle, 0.0);
  EXPECT_EQ(d.scale, 0.5 + b.random());
  b.random();
  b.random();
  const double lo = 0.5 - 0.1, hi = 0.5 + 0.1;
  EXPECT_EQ(d.tx, lo + (hi - lo) * b.random());
  EXPECT_EQ(d.ty, lo + (hi - lo) * b.random());
  EXPECT_EQ(a.next_u64(), b.next_u64());
}

TEST(AugmentPerspective, BoxCandidatesMatchYolov5) {
  const auto& bc = test::reference("boxes_letterbox_candidates.json").at("box_candidates");
  const auto b1 = json_doubles(bc.at("inputs").at("box1")), b2 = json_doubles(bc.at("inputs").at("box2"));
  const auto keep = json_doubles(bc.at("outputs").at("keep"));
  ASSERT_EQ(keep.size(), 30u);
  for (size_t i = 0; i < keep.size(); ++i) EXPECT_EQ(box_candidate(&b1[4 * i], &b2[4 * i]), keep[i] != 0) << "pair " << i;
}

TEST(AugmentPerspective, CocoImageLoadsAsYolov5Did) {
  KESTREL_REQUIRE_SHARED(path, "data/coco128/images/train2017/000000000071.jpg");
  const cv::Mat full = cv::imread(path, cv::IMREAD_COLOR);
  const double r = 320.0 / std::max(full.rows, full.cols);
  cv::Mat resized;
  cv::resize(full, resized, cv::Size(int(full.cols * r), int(full.rows * r)), 0, 0, cv::INTER_LINEAR);
  test::expect_pixel_summary(resized, ref().at("image").at("pixels_summary"), "load_image");
}

}  // namespace
}  // namespace kestrel
