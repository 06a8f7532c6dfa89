// make_train_sample / make_letterbox_sample: the direct-warp training path must give the same bytes and
// labels as the reference path for every kind of sample (mosaic, mixup, flips, rotation/shear, letterbox, projective
// fallback), samples must depend only on the generator, and validation samples carry YOLOv5's shapes entry.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <sstream>

#include "data/augment/sample.h"
#include "test_support.h"

namespace kestrel {
namespace {

// A dataset in memory: images already at long side s, normalized labels.
struct MemoryDataset {
  std::vector<cv::Mat> images;
  std::vector<std::vector<Label>> labels;
  std::vector<cv::Size> orig;
  ImageLoader loader() const {
    return [this](size_t i, const DecodeRegion*) { return LoadedImage{images[i], orig[i].height, orig[i].width, &labels[i]}; };
  }
};

MemoryDataset synthetic_dataset(int s, int n) {
  MemoryDataset d;
  cv::RNG rng(12345);
  for (int i = 0; i < n; ++i) {
    const bool wide = i % 2 == 0;
    const int other = s / 2 + int(rng.uniform(0, s / 2));
    cv::Mat img(wide ? other : s, wide ? s : other, CV_8UC3);
    rng.fill(img, cv::RNG::UNIFORM, 0, 256);
    cv::GaussianBlur(img, img, cv::Size(5, 5), 0);  // some structure, so interpolation matters
    d.images.push_back(img);
    d.orig.push_back(cv::Size(img.cols * 2, img.rows * 2));
    std::vector<Label> l;
    for (int k = 0; k < i % 5; ++k) {
      const float w = rng.uniform(0.05f, 0.5f), h = rng.uniform(0.05f, 0.5f);
      l.push_back({float(k), rng.uniform(w / 2, 1 - w / 2), rng.uniform(h / 2, 1 - h / 2), w, h});
    }
    d.labels.push_back(l);
  }
  return d;
}

MemoryDataset coco128(const std::string& dir, int s) {
  MemoryDataset d;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/images/train2017")) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const cv::Mat full = cv::imread(f, cv::IMREAD_COLOR);
    const double r = double(s) / std::max(full.rows, full.cols);
    cv::Mat img;
    cv::resize(full, img, cv::Size(int(full.cols * r), int(full.rows * r)), 0, 0, cv::INTER_LINEAR);
    d.images.push_back(img);
    d.orig.push_back(full.size());
    std::vector<Label> l;
    std::ifstream in(dir + "/labels/train2017/" + std::filesystem::path(f).stem().string() + ".txt");
    for (std::string line; std::getline(in, line);) {
      std::istringstream ss(line);
      double v[5];
      if (ss >> v[0] >> v[1] >> v[2] >> v[3] >> v[4]) l.push_back({float(v[0]), float(v[1]), float(v[2]), float(v[3]), float(v[4])});
    }
    d.labels.push_back(l);
  }
  return d;
}

struct Diff {
  double mean_abs = 0;
  double max_abs = 0;
};

Diff pixel_diff(const cv::Mat& a, const cv::Mat& b) {
  cv::Mat d;
  cv::absdiff(a, b, d);
  return {cv::mean(d.reshape(1))[0], cv::norm(d, cv::NORM_INF)};
}

void expect_same_labels(const std::vector<Label>& a, const std::vector<Label>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].cls, b[i].cls);
    EXPECT_EQ(a[i].x, b[i].x);
    EXPECT_EQ(a[i].y, b[i].y);
    EXPECT_EQ(a[i].w, b[i].w);
    EXPECT_EQ(a[i].h, b[i].h);
  }
}

// Builds samples both ways for a range of indices and returns the worst difference.
Diff compare_paths(const MemoryDataset& d, const Hyp& hyp, int s, int shape_h, int shape_w, bool mosaic, int count,
                   bool fused_hsv = false, bool ultralytics = false) {
  Diff worst;
  const ImageLoader load = d.loader();
  for (int i = 0; i < count; ++i) {
    SCOPED_TRACE("index " + std::to_string(i));
    Sample direct, ref;
    SampleRng r1(7, 1, i), r2(7, 1, i);
    make_train_sample(load, i, d.images.size(), hyp, s, shape_h, shape_w, mosaic, r1, direct,
                      SampleOptions{true, fused_hsv, ultralytics});
    make_train_sample(load, i, d.images.size(), hyp, s, shape_h, shape_w, mosaic, r2, ref, SampleOptions{false, true, ultralytics});
    EXPECT_EQ(r1.next_u64(), r2.next_u64()) << "both paths make the same draws";
    EXPECT_EQ(direct.bgr.size(), ref.bgr.size());
    if (direct.bgr.size() != ref.bgr.size()) continue;
    const Diff diff = pixel_diff(direct.bgr, ref.bgr);
    worst.mean_abs = std::max(worst.mean_abs, diff.mean_abs);
    worst.max_abs = std::max(worst.max_abs, diff.max_abs);
    expect_same_labels(direct.labels, ref.labels);
    EXPECT_EQ(direct.info.pad_w, ref.info.pad_w);
    for (const Label& l : direct.labels) {
      EXPECT_GE(l.x - l.w / 2, -1e-6f);
      EXPECT_LE(l.x + l.w / 2, 1 + 1e-6f);
    }
  }
  return worst;
}

Hyp strong_hyp() {
  Hyp h;
  h.degrees = 10;
  h.shear = 5;
  h.flipud = 0.5;
  h.mixup = 0.5;
  return h;
}

// The direct path reproduces OpenCV's fixed-point warp exactly, so the paths agree bit for bit, with
// YOLOv5's float64 matrices and Ultralytics' float32 ones.
TEST(Sample, DirectWarpEqualsReferenceOnSyntheticData) {
  const int s = 96;
  const MemoryDataset d = synthetic_dataset(s, 12);
  Hyp projective = strong_hyp();
  projective.perspective = 0.0005;
  for (const bool ultralytics : {false, true}) {
    SCOPED_TRACE(ultralytics ? "Ultralytics" : "YOLOv5");
    for (const Hyp& hyp : {Hyp{}, strong_hyp(), projective}) {
      EXPECT_EQ(compare_paths(d, hyp, s, s, s, true, 12, false, ultralytics).max_abs, 0);     // mosaic (+ mixup)
      EXPECT_EQ(compare_paths(d, hyp, s, s, s, false, 12, false, ultralytics).max_abs, 0);    // letterbox square
      EXPECT_EQ(compare_paths(d, hyp, s, 64, 96, false, 12, false, ultralytics).max_abs, 0);  // letterbox rect shape
    }
  }
}

TEST(Sample, DirectWarpEqualsReferenceOnCoco128Mosaics) {
  KESTREL_REQUIRE_SHARED(dir, "data/coco128");
  const int s = 320;
  const MemoryDataset d = coco128(dir, s);
  ASSERT_EQ(d.images.size(), 128u);
  const Diff plain = compare_paths(d, Hyp{}, s, s, s, true, 16);
  const Diff strong = compare_paths(d, strong_hyp(), s, s, s, true, 8);
  std::cout << "direct vs reference, coco128 mosaics at " << s << ": mean |diff| " << plain.mean_abs << " / "
            << strong.mean_abs << " (rotated, sheared, mixup), max " << plain.max_abs << " / " << strong.max_abs
            << "\n";
  EXPECT_EQ(plain.max_abs, 0);
  EXPECT_EQ(strong.max_abs, 0);
  // The fused HSV kernel reproduces OpenCV's vector loop; rows of 320 never reach its scalar tail.
  const Diff fused = compare_paths(d, Hyp{}, s, s, s, true, 16, true);
  std::cout << "direct + fused HSV vs reference: mean |diff| " << fused.mean_abs << ", max " << fused.max_abs << "\n";
  EXPECT_LE(fused.max_abs, 1);
  EXPECT_LT(fused.mean_abs, 1e-4);
}

TEST(Sample, DependsOnlyOnTheGenerator) {
  const int s = 64;
  const MemoryDataset d = synthetic_dataset(s, 8);
  Sample a, b, c;
  SampleRng r1(1, 2, 3), r2(1, 2, 3), r3(1, 3, 3);
  make_train_sample(d.loader(), 3, 8, strong_hyp(), s, s, s, true, r1, a);
  make_train_sample(d.loader(), 3, 8, strong_hyp(), s, s, s, true, r2, b);
  make_train_sample(d.loader(), 3, 8, strong_hyp(), s, s, s, true, r3, c);
  EXPECT_EQ(cv::norm(a.bgr, b.bgr, cv::NORM_INF), 0);
  expect_same_labels(a.labels, b.labels);
  EXPECT_GT(cv::norm(a.bgr, c.bgr, cv::NORM_INF), 0) << "another epoch gives another sample";
  EXPECT_EQ(a.bgr.rows, s);
  EXPECT_EQ(a.bgr.cols, s);
}

TEST(Sample, MosaicOffUsesTheLetterboxShape) {
  const int s = 64;
  const MemoryDataset d = synthetic_dataset(s, 4);
  Hyp hyp;
  hyp.mosaic = 1.0;
  Sample out;
  SampleRng rng(0, 0, 1);
  make_train_sample(d.loader(), 1, 4, hyp, s, 32, 64, false, rng, out);
  EXPECT_EQ(out.bgr.rows, 32);
  EXPECT_EQ(out.bgr.cols, 64);
  EXPECT_EQ(out.info.orig_h, d.orig[1].height);
}

// A 427 x 640 original loaded at 320 (213 x 320, flat colour) with one class-3 label spanning its height.
MemoryDataset wide_image_loaded_at_320() {
  MemoryDataset d;
  d.images.push_back(cv::Mat(213, 320, CV_8UC3, cv::Scalar(10, 20, 30)));
  d.orig.push_back(cv::Size(640, 427));
  d.labels.push_back({{3, 0.5f, 0.5f, 0.25f, 1.0f}});
  return d;
}

TEST(Sample, LetterboxSampleCarriesYolov5Shapes) {
  // A 427 x 640 original loaded at 320 is 213 x 320; letterboxed to 320 x 320 without scaling up.
  const MemoryDataset d = wide_image_loaded_at_320();
  Sample out;
  make_letterbox_sample(d.loader(), 0, 320, 320, out);
  ASSERT_EQ(out.bgr.rows, 320);
  ASSERT_EQ(out.bgr.cols, 320);
  EXPECT_EQ(out.info.orig_h, 427);
  EXPECT_EQ(out.info.orig_w, 640);
  EXPECT_EQ(out.info.ratio_h, 213.0 / 427);
  EXPECT_EQ(out.info.ratio_w, 320.0 / 640);
  EXPECT_EQ(out.info.pad_w, 0);
  EXPECT_EQ(out.info.pad_h, 53.5);
  EXPECT_EQ(out.bgr.at<cv::Vec3b>(0, 0), cv::Vec3b(114, 114, 114));
  EXPECT_EQ(out.bgr.at<cv::Vec3b>(160, 160), cv::Vec3b(10, 20, 30));
  ASSERT_EQ(out.labels.size(), 1u);
  // Float32 step by step: y1 = 213*(0.5-0.5)+53.5, y2 = 213*(0.5+0.5)+53.5, then normalized by 320.
  const float y1 = 213.f * (0.5f - 1.0f / 2) + 53.5f, y2 = 213.f * (0.5f + 1.0f / 2) + 53.5f;
  EXPECT_EQ(out.labels[0].y, (y1 + y2) / 2 / 320.f);
  EXPECT_EQ(out.labels[0].h, (y2 - y1) / 320.f);
  EXPECT_EQ(out.labels[0].x, 0.5f);
  EXPECT_EQ(out.labels[0].cls, 3.f);
}

TEST(Sample, LetterboxSampleInUltralyticsGeometryPlacesLabelsOnTheImage) {
  // The same image in Ultralytics' geometry: it sits at row round(53.5 - 0.1) = 53, and so does its
  // label (YOLOv5 puts the label at 53.5, half a pixel below the image); the mapping back keeps 53.
  const MemoryDataset d = wide_image_loaded_at_320();
  Sample out;
  SampleOptions ultralytics;
  ultralytics.ultralytics = true;
  make_letterbox_sample(d.loader(), 0, 320, 320, out, ultralytics);
  EXPECT_EQ(out.bgr.at<cv::Vec3b>(52, 160), cv::Vec3b(114, 114, 114));
  EXPECT_EQ(out.bgr.at<cv::Vec3b>(53, 160), cv::Vec3b(10, 20, 30));
  EXPECT_EQ(out.info.pad_w, 0);
  EXPECT_EQ(out.info.pad_h, 53);
  EXPECT_TRUE(out.info.gain_per_axis);
  ASSERT_EQ(out.labels.size(), 1u);
  const float y1 = 213.f * (0.5f - 1.0f / 2) + 53.f, y2 = 213.f * (0.5f + 1.0f / 2) + 53.f;
  EXPECT_EQ(out.labels[0].y, (y1 + y2) / 2 / 320.f);
  EXPECT_EQ(out.labels[0].h, (y2 - y1) / 320.f);
}

}  // namespace
}  // namespace kestrel
