// Training augmentation cost at img 640 on coco128 images, one thread (as each loader worker runs it):
// the reference mosaic (2s x 2s canvas + cv::warpAffine) against the canvas-free direct warp, whole
// training samples both ways (mosaic, perspective, HSV, flips), HSV three ways (whole image, strips, the
// fused kernel), and the validation letterbox.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "data/augment/hsv.h"
#include "data/augment/letterbox.h"
#include "data/augment/mosaic.h"
#include "data/augment/sample.h"

namespace kestrel {
namespace {

constexpr int kImgSize = 640;
constexpr size_t kImages = 16;

// The first kImages coco128 images as load_image returns them at 640, with a few labels each.
struct Images {
  std::vector<cv::Mat> bgr;
  std::vector<std::vector<Label>> labels;
  Images() {
    const std::string dir = std::string(KESTREL_SHARED_DIR) + "/data/coco128/images/train2017";
    if (!std::filesystem::exists(dir)) return;
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (size_t i = 0; i < std::min(kImages, files.size()); ++i) {
      const cv::Mat full = cv::imread(files[i], cv::IMREAD_COLOR);
      const double r = double(kImgSize) / std::max(full.rows, full.cols);
      cv::Mat img;
      cv::resize(full, img, cv::Size(int(full.cols * r), int(full.rows * r)), 0, 0, cv::INTER_LINEAR);
      bgr.push_back(img);
      labels.push_back({{0, 0.3f, 0.4f, 0.2f, 0.3f}, {1, 0.6f, 0.5f, 0.4f, 0.5f}, {2, 0.5f, 0.5f, 0.05f, 0.05f}});
    }
  }
  bool ok(benchmark::State& state) const {
    if (bgr.size() == kImages) return true;
    state.SkipWithError("../shared/data/coco128 not present");
    return false;
  }
  ImageLoader loader() const {
    return [this](size_t i, const DecodeRegion*) { return LoadedImage{bgr[i], bgr[i].rows * 2, bgr[i].cols * 2, &labels[i]}; };
  }
};

const Images& images() {
  static const Images im;
  return im;
}

std::array<MosaicTile, 4> tiles_of(const MosaicDraws& d) {
  std::array<MosaicTile, 4> t;
  for (int k = 0; k < 4; ++k) t[k] = {images().bgr[d.indices[k]], &images().labels[d.indices[k]]};
  return t;
}

void mosaic_bench(benchmark::State& state, bool direct) {
  if (!images().ok(state)) return;
  const PerspectiveParams p = PerspectiveParams::from(Hyp{});
  cv::Mat out;
  std::vector<BoxLabel> boxes;
  uint64_t i = 0;
  for (auto _ : state) {
    SampleRng rng(0, 0, i++);
    const MosaicDraws d = draw_mosaic(rng, i % kImages, kImages, kImgSize, p);
    const auto tiles = tiles_of(d);
    if (direct)
      mosaic_direct(tiles, d, kImgSize, p, i % 2, false, out, boxes);
    else
      mosaic_on_canvas(tiles, d, kImgSize, p, out, boxes);
    benchmark::DoNotOptimize(out.data);
  }
}
void BM_MosaicPerspectiveCanvas(benchmark::State& s) { mosaic_bench(s, false); }
void BM_MosaicPerspectiveDirect(benchmark::State& s) { mosaic_bench(s, true); }

void train_sample_bench(benchmark::State& state, bool direct) {
  if (!images().ok(state)) return;
  const ImageLoader load = images().loader();
  Sample out;
  uint64_t i = 0;
  for (auto _ : state) {
    SampleRng rng(0, 0, i);
    make_train_sample(load, i % kImages, kImages, Hyp{}, kImgSize, kImgSize, kImgSize, true, rng, out,
                      SampleOptions{direct, direct});
    ++i;
    benchmark::DoNotOptimize(out.bgr.data);
  }
}
void BM_TrainSampleMosaicCanvas(benchmark::State& s) { train_sample_bench(s, false); }
void BM_TrainSampleMosaicDirect(benchmark::State& s) { train_sample_bench(s, true); }

enum class HsvPath { whole, strips, fused };

// shift_hue: Ultralytics' hue (the fused kernel gathers it from a table instead of computing it).
void hsv_bench(benchmark::State& state, HsvPath path, bool shift_hue = false) {
  cv::Mat img(kImgSize, kImgSize, CV_8UC3);
  cv::randu(img, 0, 256);
  const double u[3] = {0.3, -0.5, 0.7};
  const HsvGains g = hsv_gains_from_u(u, 0.015, 0.7, 0.4, shift_hue);
  for (auto _ : state) {
    switch (path) {
      case HsvPath::whole: augment_hsv(img, g); break;
      case HsvPath::strips: augment_hsv_strips(img, g); break;
      case HsvPath::fused: augment_hsv_fast(img, g); break;
    }
    benchmark::DoNotOptimize(img.data);
  }
}
void BM_HsvWholeImage(benchmark::State& s) { hsv_bench(s, HsvPath::whole); }
void BM_HsvStrips(benchmark::State& s) { hsv_bench(s, HsvPath::strips); }
void BM_HsvFused(benchmark::State& s) { hsv_bench(s, HsvPath::fused); }
void BM_HsvStripsShiftedHue(benchmark::State& s) { hsv_bench(s, HsvPath::strips, true); }
void BM_HsvFusedShiftedHue(benchmark::State& s) { hsv_bench(s, HsvPath::fused, true); }

void BM_Letterbox(benchmark::State& state) {
  if (!images().ok(state)) return;
  cv::Mat out;
  LetterboxInfo info;
  size_t i = 0;
  for (auto _ : state) {
    letterbox(images().bgr[i++ % kImages], kImgSize, kImgSize, false, false, out, &info);
    benchmark::DoNotOptimize(out.data);
  }
}

BENCHMARK(BM_MosaicPerspectiveCanvas)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MosaicPerspectiveDirect)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TrainSampleMosaicCanvas)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TrainSampleMosaicDirect)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HsvWholeImage)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HsvStrips)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HsvFused)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HsvStripsShiftedHue)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HsvFusedShiftedHue)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Letterbox)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kestrel

int main(int argc, char** argv) {
  cv::setNumThreads(1);  // per-worker cost: loader threads each build whole samples
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
