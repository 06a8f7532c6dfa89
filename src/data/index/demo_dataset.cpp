// Deterministic synthetic shapes dataset: textured background (gradient, soft blotches, noise) with 1-5
// crisp, saturated shapes whose class depends only on the shape, never on colour or size.
#include "data/index/demo_dataset.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <stdexcept>
#include <thread>

#include "data/io/cache_dir.h"
#include "data/augment/rng.h"
#include "core/parallel_for.h"

namespace fs = std::filesystem;

namespace kestrel {
namespace {

constexpr uint64_t kSeed = 20240601;
constexpr const char* kFolder = "demo-v1";

struct Box {
  double x1, y1, x2, y2;
  double iou(const Box& o) const {
    const double iw = std::max(0.0, std::min(x2, o.x2) - std::max(x1, o.x1));
    const double ih = std::max(0.0, std::min(y2, o.y2) - std::max(y1, o.y1));
    const double inter = iw * ih;
    return inter / ((x2 - x1) * (y2 - y1) + (o.x2 - o.x1) * (o.y2 - o.y1) - inter);
  }
};

cv::Scalar hsv_colour(SampleRng& rng, double s_lo, double s_hi, double v_lo, double v_hi) {
  cv::Mat px(1, 1, CV_8UC3, cv::Scalar(rng.uniform(0, 180), rng.uniform(s_lo, s_hi) * 255, rng.uniform(v_lo, v_hi) * 255));
  cv::cvtColor(px, px, cv::COLOR_HSV2BGR);
  const cv::Vec3b c = px.at<cv::Vec3b>(0, 0);
  return {double(c[0]), double(c[1]), double(c[2])};
}

void paint_background(cv::Mat& img, SampleRng& rng) {
  const cv::Scalar a = hsv_colour(rng, 0.0, 0.35, 0.25, 0.75), b = hsv_colour(rng, 0.0, 0.35, 0.25, 0.75);
  const double angle = rng.uniform(0, 2 * M_PI), c = std::cos(angle), s = std::sin(angle);
  const double span = std::abs(c) * img.cols + std::abs(s) * img.rows;
  const double offset = std::min(0.0, c * img.cols) + std::min(0.0, s * img.rows);
  for (int y = 0; y < img.rows; ++y) {
    auto* row = img.ptr<cv::Vec3b>(y);
    for (int x = 0; x < img.cols; ++x) {
      const double t = (c * x + s * y - offset) / span;
      for (int k = 0; k < 3; ++k) row[x][k] = cv::saturate_cast<uchar>(a[k] + (b[k] - a[k]) * t);
    }
  }
  // Blotches are drawn at 1/8 scale and enlarged, which makes them soft without a costly wide blur.
  constexpr int kScale = 8;
  cv::Mat small;
  cv::resize(img, small, cv::Size(img.cols / kScale, img.rows / kScale), 0, 0, cv::INTER_AREA);
  const int blotches = 3 + static_cast<int>(rng.below(6));
  for (int i = 0; i < blotches; ++i) {
    const cv::Point centre(static_cast<int>(rng.below(small.cols)), static_cast<int>(rng.below(small.rows)));
    const cv::Size axes(static_cast<int>(rng.uniform(25, 110) / kScale), static_cast<int>(rng.uniform(25, 110) / kScale));
    cv::ellipse(small, centre, axes, rng.uniform(0, 180), 0, 360, hsv_colour(rng, 0.0, 0.4, 0.2, 0.8), -1, cv::LINE_AA);
  }
  cv::Mat overlay;
  cv::resize(small, overlay, img.size(), 0, 0, cv::INTER_CUBIC);
  cv::addWeighted(img, 0.6, overlay, 0.4, 0, img);
}

void add_noise(cv::Mat& img, SampleRng& rng) {
  const size_t n = img.total() * img.channels();
  uchar* p = img.data;
  for (size_t i = 0; i < n; i += 8) {
    uint64_t bits = rng.next_u64();
    for (size_t k = i; k < std::min(n, i + 8); ++k, bits >>= 8)
      p[k] = cv::saturate_cast<uchar>(int(p[k]) + int(bits & 0xff) % 25 - 12);
  }
}

// Draws one shape of class `cls` with long side `size` centred at (cx, cy); returns its exact pixel box.
Box draw_shape(cv::Mat& img, int cls, double cx, double cy, double size, SampleRng& rng) {
  const cv::Scalar fill = hsv_colour(rng, 0.65, 1.0, 0.7, 1.0), edge(20, 20, 20);
  std::vector<cv::Point> pts;
  const double h = size / 2;
  switch (cls) {
    case 0: {  // circle
      const int r = std::max(2, static_cast<int>(std::lround(h)));
      const cv::Point c(static_cast<int>(std::lround(cx)), static_cast<int>(std::lround(cy)));
      cv::circle(img, c, r, fill, -1, cv::LINE_AA);
      cv::circle(img, c, r, edge, 2, cv::LINE_AA);
      return {c.x - r - 1.0, c.y - r - 1.0, c.x + r + 2.0, c.y + r + 2.0};
    }
    case 1: {  // rectangle, aspect 0.45..1
      const double aspect = rng.uniform(0.45, 1.0);
      const bool tall = rng.random() < 0.5;
      const double hw = tall ? h * aspect : h, hh = tall ? h : h * aspect;
      pts = {{int(cx - hw), int(cy - hh)}, {int(cx + hw), int(cy - hh)}, {int(cx + hw), int(cy + hh)}, {int(cx - hw), int(cy + hh)}};
      break;
    }
    case 2: {  // triangle, randomly rotated
      const double rot = rng.uniform(0, 2 * M_PI);
      for (int k = 0; k < 3; ++k) {
        const double a = rot + k * 2 * M_PI / 3;
        pts.emplace_back(static_cast<int>(std::lround(cx + h * std::cos(a))), static_cast<int>(std::lround(cy + h * std::sin(a))));
      }
      break;
    }
    default: {  // cross (plus sign), bars 28-40% thick
      const double t = h * rng.uniform(0.28, 0.4);
      const int l = int(cx - h), r = int(cx + h), tp = int(cy - h), b = int(cy + h);
      const int il = int(cx - t), ir = int(cx + t), it = int(cy - t), ib = int(cy + t);
      pts = {{il, tp}, {ir, tp}, {ir, it}, {r, it}, {r, ib}, {ir, ib}, {ir, b}, {il, b}, {il, ib}, {l, ib}, {l, it}, {il, it}};
      break;
    }
  }
  cv::fillPoly(img, std::vector<std::vector<cv::Point>>{pts}, fill, cv::LINE_AA);
  cv::polylines(img, std::vector<std::vector<cv::Point>>{pts}, true, edge, 2, cv::LINE_AA);
  Box box{1e9, 1e9, -1e9, -1e9};
  for (const cv::Point& p : pts) box = {std::min(box.x1, p.x - 1.0), std::min(box.y1, p.y - 1.0), std::max(box.x2, p.x + 2.0), std::max(box.y2, p.y + 2.0)};
  return box;
}

// One image and its label text, a pure function of (split, index).
void make_image(uint64_t split, uint64_t index, cv::Mat& img, std::string& label) {
  SampleRng rng(kSeed, split, index);
  const int w = 256 + 32 * static_cast<int>(rng.below(5)), h = 256 + 32 * static_cast<int>(rng.below(5));
  img.create(h, w, CV_8UC3);
  paint_background(img, rng);
  const int side = std::min(w, h), wanted = 1 + static_cast<int>(rng.below(5));
  std::vector<Box> placed;
  label.clear();
  for (int attempt = 0; attempt < 40 && static_cast<int>(placed.size()) < wanted; ++attempt) {
    const int cls = static_cast<int>(rng.below(4));
    const double size = side * rng.uniform(0.08, 0.35);
    const double margin = size / 2 + 3;
    const double cx = rng.uniform(margin, w - margin), cy = rng.uniform(margin, h - margin);
    const Box reach{cx - size / 2, cy - size / 2, cx + size / 2, cy + size / 2};
    if (std::any_of(placed.begin(), placed.end(), [&](const Box& b) { return b.iou(reach) > 0.1; })) continue;
    Box b = draw_shape(img, cls, cx, cy, size, rng);
    b = {std::max(0.0, b.x1), std::max(0.0, b.y1), std::min<double>(w, b.x2), std::min<double>(h, b.y2)};
    placed.push_back(b);
    char line[96];
    std::snprintf(line, sizeof line, "%d %.6f %.6f %.6f %.6f\n", cls, (b.x1 + b.x2) / 2 / w, (b.y1 + b.y2) / 2 / h,
                  (b.x2 - b.x1) / w, (b.y2 - b.y1) / h);
    label += line;
  }
  add_noise(img, rng);
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

void generate(const fs::path& dir) {
  const std::pair<const char*, int> splits[] = {{"train", kDemoTrainImages}, {"val", kDemoValImages}};
  for (const auto& [name, count] : splits) {
    fs::create_directories(dir / "images" / name);
    fs::create_directories(dir / "labels" / name);
  }
  parallel_for(kDemoTrainImages + kDemoValImages, [&](size_t job) {
    thread_local cv::Mat img;
    thread_local std::string label;
    thread_local std::vector<unsigned char> jpeg;
    const int split = job < kDemoTrainImages ? 0 : 1, index = static_cast<int>(split ? job - kDemoTrainImages : job);
    const char* name = splits[split].first;
    char stem[32];
    std::snprintf(stem, sizeof stem, "%s_%04d", name, index);
    make_image(static_cast<uint64_t>(split), static_cast<uint64_t>(index), img, label);
    cv::imencode(".jpg", img, jpeg, {cv::IMWRITE_JPEG_QUALITY, 92});
    write_text(dir / "images" / name / (std::string(stem) + ".jpg"), std::string(jpeg.begin(), jpeg.end()));
    write_text(dir / "labels" / name / (std::string(stem) + ".txt"), label);
  }, {2});
  std::string yaml =
      "# Kestrel demo dataset: synthetic shapes, generated by ensure_demo_dataset(). Safe to delete.\n"
      "path: .\ntrain: images/train\nval: images/val\nnames:\n";
  for (size_t i = 0; i < demo_class_names().size(); ++i)
    yaml += "  " + std::to_string(i) + ": " + demo_class_names()[i] + "\n";
  write_text(dir / "data.yaml", yaml);  // last: its presence marks a complete dataset
}

}  // namespace

const std::vector<std::string>& demo_class_names() {
  static const std::vector<std::string> names = {"circle", "rectangle", "triangle", "cross"};
  return names;
}

std::string ensure_demo_dataset(const std::string& cache_root) {
  const std::string root = cache_root.empty() ? user_cache_dir() : cache_root;
  if (root.empty()) throw std::runtime_error("no cache folder for the demo dataset: set XDG_CACHE_HOME or HOME");
  const fs::path final_dir = fs::path(root) / kFolder, yaml = final_dir / "data.yaml";
  if (fs::exists(yaml)) return yaml.string();

  static std::atomic<unsigned> counter{0};
  const fs::path tmp = fs::path(root) / (std::string(kFolder) + ".tmp-" + std::to_string(::getpid()) + "-" +
                                         std::to_string(counter++));
  std::error_code ec;
  fs::remove_all(tmp, ec);
  try {
    generate(tmp);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  if (fs::exists(final_dir) && !fs::exists(yaml)) fs::remove_all(final_dir, ec);  // debris, not a dataset
  fs::rename(tmp, final_dir, ec);
  if (ec) {  // another process finished first: keep its copy
    fs::remove_all(tmp, ec);
    if (!fs::exists(yaml)) throw std::runtime_error("cannot create the demo dataset in " + final_dir.string());
  }
  return yaml.string();
}

}  // namespace kestrel
