// Tests of the threaded batch loader and the image caches: determinism across worker counts, epoch order,
// rect shapes, cancellation and shutdown, memory stability, RAM/disk cache contents and reuse.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <opencv2/imgcodecs.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "data/index/dataset_config.h"
#include "data/io/image_decode.h"
#include "data/index/label_index.h"
#include "data/loader/loader.h"
#include "data/loader/worker_tuning.h"
#include "test_support.h"

namespace fs = std::filesystem;

namespace kestrel {
namespace {

// Writes a JPEG of w x h with smooth gradients plus noise seeded by `seed`; returns its record.
ImageRecord write_image(const std::string& dir, int i, int w, int h, uint64_t seed = 0) {
  cv::Mat img(h, w, CV_8UC3);
  cv::RNG rng(seed * 1000 + i + 1);
  rng.fill(img, cv::RNG::UNIFORM, 0, 64);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) img.at<cv::Vec3b>(y, x) += cv::Vec3b(x * 190 / w, y * 190 / h, (x + y + 40 * i) % 190);
  ImageRecord r;
  r.image_path = dir + "/img" + std::to_string(i) + ".jpg";
  EXPECT_TRUE(cv::imwrite(r.image_path, img));
  r.width = w, r.height = h;
  r.labels = {{static_cast<float>(i % 3), 0.5f, 0.5f, 0.4f, 0.3f}, {1.f, 0.3f, 0.6f, 0.2f, 0.25f}};
  return r;
}

std::vector<ImageRecord> tiny_dataset(const std::string& dir, int n) {
  static const int sizes[][2] = {{96, 72}, {72, 96}, {80, 80}, {120, 60}, {50, 90}, {100, 75}};
  std::vector<ImageRecord> records;
  for (int i = 0; i < n; ++i) records.push_back(write_image(dir, i, sizes[i % 6][0], sizes[i % 6][1]));
  return records;
}

LoaderOptions small_options(int workers) {
  LoaderOptions o;
  o.img_size = 64, o.batch_size = 4, o.workers = workers, o.prefetch = 2, o.seed = 7;
  return o;
}

// Everything a batch carries, copied out so it outlives the loader.
struct BatchCopy {
  explicit BatchCopy(const Batch& b)
      : n(b.n), h(b.h), w(b.w), pixels(b.pixels.begin(), b.pixels.end()), labels(b.labels), paths(b.paths) {}
  int n, h, w;
  std::vector<uint8_t> pixels;
  std::vector<float> labels;
  std::vector<std::string> paths;
  bool operator==(const BatchCopy& o) const {
    return n == o.n && h == o.h && w == o.w && pixels == o.pixels && labels == o.labels && paths == o.paths;
  }
};

std::vector<BatchCopy> run_epoch(Loader& loader, int epoch) {
  loader.start_epoch(epoch);
  std::vector<BatchCopy> out;
  while (const Batch* b = loader.next()) {
    EXPECT_EQ(b->pixels.size(), static_cast<size_t>(b->n) * 3 * b->h * b->w);
    out.emplace_back(*b);
  }
  return out;
}

std::vector<BatchCopy> run_epoch(const std::vector<ImageRecord>& records, const LoaderOptions& o, int epoch) {
  Loader loader(records, o);
  return run_epoch(loader, epoch);
}

std::vector<std::string> paths_of(const std::vector<BatchCopy>& batches) {
  std::vector<std::string> out;
  for (const auto& b : batches) out.insert(out.end(), b.paths.begin(), b.paths.end());
  return out;
}

size_t rss_bytes() {
  std::ifstream in("/proc/self/statm");
  size_t pages = 0, resident = 0;
  in >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// Runs f on another thread and fails if it has not finished within `seconds`; the process then exits
// at once instead of hanging the test run on a deadlocked loader.
void expect_finishes_within(double seconds, const std::function<void()>& f) {
  auto state = std::make_shared<std::pair<std::mutex, std::condition_variable>>();
  auto done = std::make_shared<bool>(false);
  std::thread([=] {
    f();
    std::lock_guard<std::mutex> lock(state->first);
    *done = true;
    state->second.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(state->first);
  if (!state->second.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return *done; })) {
    ADD_FAILURE() << "did not finish within " << seconds << " s (deadlock?)";
    std::fflush(stdout);
    std::_Exit(1);
  }
}

TEST(Loader, BatchesAreIdenticalForAnyWorkerCount) {
  const auto records = tiny_dataset(test::temp_dir("loader_workers"), 10);
  for (bool augment : {true, false}) {
    LoaderOptions o = small_options(0);
    o.augment = augment;
    const auto reference = run_epoch(records, o, 1);
    ASSERT_EQ(reference.size(), 3u);
    for (int workers : {1, 2, 3}) {
      o.workers = workers;
      EXPECT_TRUE(run_epoch(records, o, 1) == reference) << "workers " << workers << " augment " << augment;
    }
  }
}

// Images that need no resize at img 64 (long side 64, or 128 decoded at 1/2), so mosaic tiles are
// decoded in part: the batches must be the bytes whole decodes give.
TEST(Loader, PartialTileDecodesGiveTheSameBatches) {
  const std::string dir = test::temp_dir("loader_partial");
  static const int sizes[][2] = {{64, 48}, {48, 64}, {64, 64}, {128, 96}, {96, 128}, {64, 40}, {128, 72}};
  std::vector<ImageRecord> records;
  for (int i = 0; i < 14; ++i) records.push_back(write_image(dir, i, sizes[i % 7][0], sizes[i % 7][1], 3));
  LoaderOptions o = small_options(2);
  o.hyp.mixup = 0.5;
  for (int epoch : {0, 1}) {
    o.partial_decode = false;
    const auto whole = run_epoch(records, o, epoch);
    o.partial_decode = true;
    EXPECT_TRUE(run_epoch(records, o, epoch) == whole) << "epoch " << epoch;
  }
}

// A memory resource that counts what it hands out (the trainer's is pinned memory for a GPU).
class CountingMemory : public std::pmr::memory_resource {
 public:
  size_t allocations = 0, live_bytes = 0;

 private:
  void* do_allocate(size_t bytes, size_t alignment) override {
    ++allocations, live_bytes += bytes;
    return std::pmr::new_delete_resource()->allocate(bytes, alignment);
  }
  void do_deallocate(void* p, size_t bytes, size_t alignment) override {
    live_bytes -= bytes;
    std::pmr::new_delete_resource()->deallocate(p, bytes, alignment);
  }
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }
};

// The batch buffers come from LoaderOptions::batch_memory, one per slot, allocated when the loader is
// built and reused by every batch of every epoch; the bytes are those of the default heap.
TEST(Loader, BatchBuffersComeOnceFromTheGivenMemory) {
  const auto records = tiny_dataset(test::temp_dir("loader_memory"), 10);
  const auto reference = run_epoch(records, small_options(2), 1);
  CountingMemory memory;
  {
    LoaderOptions o = small_options(2);
    o.batch_memory = &memory;
    Loader loader(records, o);
    const size_t slots = static_cast<size_t>(std::max(1, o.prefetch)) + 1;  // prefetched batches and the one held
    EXPECT_EQ(memory.allocations, slots);
    EXPECT_EQ(run_epoch(loader, 0).size(), 3u);
    EXPECT_TRUE(run_epoch(loader, 1) == reference);
    EXPECT_EQ(memory.allocations, slots);  // no buffer was grown or replaced
    const Batch* b = (loader.start_epoch(1), loader.next());
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->pixels.get_allocator().resource(), &memory);
  }
  EXPECT_EQ(memory.live_bytes, 0u);  // handed back when the loader goes
}

TEST(Loader, SetWorkersKeepsBatchesIdentical) {
  const auto records = tiny_dataset(test::temp_dir("loader_set_workers"), 10);
  const auto reference = run_epoch(records, small_options(1), 2);
  Loader loader(records, small_options(3));
  loader.start_epoch(2);
  ASSERT_NE(loader.next(), nullptr);  // an epoch in flight is cancelled by set_workers
  for (int workers : {1, 4, 2}) {
    loader.set_workers(workers);
    EXPECT_EQ(loader.workers(), workers);
    EXPECT_TRUE(run_epoch(loader, 2) == reference) << "workers " << workers;
  }
  // every sample built by threads that went is still counted
  EXPECT_GE(loader.stage_times().calls[static_cast<int>(Stage::augment)], 30u);
  EXPECT_THROW(loader.set_workers(0), std::invalid_argument);
}

TEST(StageTimes, LargestStagePrefersTheFinestTimedStage) {
  StageTimes t;
  auto set = [&](Stage s, uint64_t v) { t.ns[static_cast<int>(s)] = v; };
  EXPECT_STREQ(largest_stage_name(t), "");
  set(Stage::load, 10), set(Stage::read, 1), set(Stage::decode, 6), set(Stage::resize, 2);
  set(Stage::augment, 8), set(Stage::colour, 3), set(Stage::collate, 1);
  EXPECT_STREQ(largest_stage_name(t), "decode");  // mosaic/warp is 8 - 3 = 5
  set(Stage::colour, 1);
  EXPECT_STREQ(largest_stage_name(t), "mosaic/warp");
  StageTimes cached;  // cache lookups: load has no timed parts and stands for itself
  cached.ns[static_cast<int>(Stage::load)] = 9;
  cached.ns[static_cast<int>(Stage::augment)] = 12;
  cached.ns[static_cast<int>(Stage::colour)] = 4;
  EXPECT_STREQ(largest_stage_name(cached), "load");
}

TEST(WorkerTuning, KneeIsTheSmallestCountWithinNoiseOfTheBest) {
  EXPECT_EQ(knee_of({{1, 100}, {2, 190}, {3, 260}, {4, 268}, {5, 262}}, 0.05), 3);
  EXPECT_EQ(knee_of({{1, 100}, {2, 101}, {3, 99}}, 0.05), 1);
  EXPECT_EQ(knee_of({{1, 100}, {2, 150}, {3, 300}}, 0.05), 3);
}

TEST(WorkerTuning, ChoosesAMeasuredCountAndLeavesTheLoaderThere) {
  const auto records = tiny_dataset(test::temp_dir("loader_auto"), 24);
  Loader loader(records, small_options(2));
  const WorkerChoice choice = choose_workers(loader, 3);
  ASSERT_FALSE(choice.curve.empty());
  for (size_t i = 0; i < choice.curve.size(); ++i) {
    EXPECT_EQ(choice.curve[i].workers, static_cast<int>(i) + 1);
    EXPECT_GT(choice.curve[i].images_per_second, 0);
  }
  for (const WorkerProbe& p : choice.curve) EXPECT_LE(p.spread / 2, choice.noise);  // timed twice: its range is known
  EXPECT_GE(choice.noise, 0.05);
  EXPECT_EQ(choice.workers, knee_of(choice.curve, choice.noise));
  EXPECT_EQ(loader.workers(), choice.workers);
  EXPECT_TRUE(run_epoch(loader, 1) == run_epoch(records, small_options(1), 1));
  EXPECT_NE(format_worker_curve(choice).find("-> " + std::to_string(choice.workers)), std::string::npos);
}

TEST(Loader, EpochOrderChangesWithEpochAndIsReproducible) {
  const auto records = tiny_dataset(test::temp_dir("loader_order"), 12);
  Loader loader(records, small_options(2));
  const auto e0 = run_epoch(loader, 0), e1 = run_epoch(loader, 1), e0_again = run_epoch(loader, 0);
  const auto p0 = paths_of(e0), p1 = paths_of(e1);
  EXPECT_NE(p0, p1);
  EXPECT_TRUE(e0 == e0_again);
  EXPECT_TRUE(run_epoch(records, small_options(1), 1) == e1);  // a fresh loader, other worker count
  std::set<std::string> unique(p1.begin(), p1.end());
  EXPECT_EQ(unique.size(), records.size());  // a permutation
  LoaderOptions seeded = small_options(2);
  seeded.seed = 8;
  EXPECT_NE(paths_of(run_epoch(records, seeded, 1)), p1);
  LoaderOptions ordered = small_options(2);
  ordered.shuffle = false;
  const auto po = paths_of(run_epoch(records, ordered, 3));
  for (size_t i = 0; i < records.size(); ++i) EXPECT_EQ(po[i], records[i].image_path);
}

TEST(Loader, BatchesPerEpochAndCollation) {
  const auto records = tiny_dataset(test::temp_dir("loader_count"), 10);
  LoaderOptions o = small_options(2);
  o.augment = false;  // letterbox only: every image keeps both labels
  Loader loader(records, o);
  EXPECT_EQ(loader.size(), 10u);
  EXPECT_EQ(loader.batches_per_epoch(), 3u);
  const auto batches = run_epoch(loader, 0);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].n, 4);
  EXPECT_EQ(batches[2].n, 2);
  for (const auto& b : batches) {
    EXPECT_EQ(b.h, 64);
    EXPECT_EQ(b.w, 64);
    ASSERT_EQ(b.labels.size(), static_cast<size_t>(b.n) * 2 * 6);
    for (size_t r = 0; r < b.labels.size() / 6; ++r) EXPECT_EQ(b.labels[r * 6], static_cast<float>(r / 2));
  }
  // RGB CHW: image 0 of batch 0 against its own letterbox (64 x 64 here) converted by hand.
  const Batch* first = nullptr;
  loader.start_epoch(0);
  first = loader.next();
  ASSERT_NE(first, nullptr);
  const auto it = std::find_if(records.begin(), records.end(), [&](const ImageRecord& r) { return r.image_path == first->paths[0]; });
  ASSERT_NE(it, records.end());
  Sample s;
  const size_t idx = it - records.begin();
  const ImageLoader load = [&](size_t i, const DecodeRegion*) {
    LoadedImage li;
    li.bgr = load_image_resized(records[i].image_path, 64, ResizeRule::yolov5_val, &li.orig_h, &li.orig_w);
    li.labels = &records[i].labels;
    return li;
  };
  make_letterbox_sample(load, idx, 64, 64, s);
  const size_t plane = 64 * 64;
  for (int y = 0; y < 64; y += 7)
    for (int x = 0; x < 64; x += 5) {
      const cv::Vec3b bgr = s.bgr.at<cv::Vec3b>(y, x);
      for (int c = 0; c < 3; ++c) EXPECT_EQ(first->pixels[c * plane + y * 64 + x], bgr[2 - c]);
    }
  EXPECT_EQ(first->shapes[0].orig_w, it->width);
  EXPECT_EQ(first->shapes[0].orig_h, it->height);
}

TEST(Loader, RectShapesMatchHandComputedCase) {
  const std::string dir = test::temp_dir("loader_rect");
  // (w, h) with h/w 4/3, 2, 0.75, 1, 2/3, 1.5: sorted 2/3, 0.75 | 1, 4/3 | 1.5, 2
  const int sizes[][2] = {{600, 800}, {300, 600}, {640, 480}, {500, 500}, {300, 200}, {400, 600}};
  std::vector<ImageRecord> records;
  for (int i = 0; i < 6; ++i) records.push_back(write_image(dir, i, sizes[i][0], sizes[i][1]));
  LoaderOptions o;
  o.img_size = 640, o.batch_size = 2, o.workers = 2, o.rect = true, o.augment = false, o.pad = 0.5;
  Loader loader(records, o);
  // batch 0: maxi 0.75 < 1 -> (0.75, 1): ceil(15 + 0.5) = 16 -> 512, ceil(20.5) = 21 -> 672
  // batch 1: mini 1, maxi 4/3 -> (1, 1): 672 x 672
  // batch 2: mini 1.5 > 1 -> (1, 1/1.5): 672, ceil(13.33 + 0.5) = 14 -> 448
  EXPECT_EQ(loader.batch_shape(0), std::make_pair(512, 672));
  EXPECT_EQ(loader.batch_shape(1), std::make_pair(672, 672));
  EXPECT_EQ(loader.batch_shape(2), std::make_pair(672, 448));
  const std::vector<int> sorted = {4, 2, 3, 0, 5, 1};  // by h/w ascending
  for (size_t i = 0; i < sorted.size(); ++i) EXPECT_EQ(loader.records()[i].image_path, records[sorted[i]].image_path);
  const auto e0 = run_epoch(loader, 0), e1 = run_epoch(loader, 5);
  ASSERT_EQ(e0.size(), 3u);
  for (size_t b = 0; b < 3; ++b) {
    EXPECT_EQ(std::make_pair(e0[b].h, e0[b].w), loader.batch_shape(b));
    EXPECT_EQ(e0[b].paths[0], loader.records()[2 * b].image_path);  // rect: no shuffle
  }
  EXPECT_TRUE(e0 == e1);

  o.pad = 0;
  Loader train_rect(records, o);  // YOLOv5 train: pad 0
  EXPECT_EQ(train_rect.batch_shape(0), std::make_pair(480, 640));
  EXPECT_EQ(train_rect.batch_shape(1), std::make_pair(640, 640));
  EXPECT_EQ(train_rect.batch_shape(2), std::make_pair(640, 448));
}

TEST(Loader, DestroyMidEpochAndRestartMidEpoch) {
  const auto records = tiny_dataset(test::temp_dir("loader_stop"), 24);
  const LoaderOptions o = small_options(2);
  expect_finishes_within(30, [&] {
    Loader loader(records, o);
    loader.start_epoch(0);
    EXPECT_NE(loader.next(), nullptr);
  });
  expect_finishes_within(30, [&] { Loader loader(records, o); });  // never started
  // start_epoch while the previous epoch is in flight gives exactly what a fresh loader gives.
  const auto expected = run_epoch(records, o, 2);
  Loader loader(records, o);
  loader.start_epoch(1);
  ASSERT_NE(loader.next(), nullptr);
  EXPECT_TRUE(run_epoch(loader, 2) == expected);
  loader.start_epoch(3);
  loader.cancel_epoch();
  EXPECT_TRUE(run_epoch(loader, 2) == expected);
}

TEST(Loader, UnreadableImageSurfacesInNext) {
  const std::string dir = test::temp_dir("loader_bad");
  auto records = tiny_dataset(dir, 4);
  std::ofstream(records[2].image_path, std::ios::trunc) << "not a jpeg";
  LoaderOptions o = small_options(2);
  o.augment = false, o.shuffle = false;
  Loader loader(records, o);
  loader.start_epoch(0);
  EXPECT_THROW(loader.next(), ImageError);
  EXPECT_EQ(loader.next(), nullptr);
}

TEST(Loader, MemoryDoesNotGrowOverEpochs) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "under AddressSanitizer freed memory waits in its quarantine, so RSS grows by design; "
                  "LeakSanitizer checks for leaks instead";
#endif
  const auto records = tiny_dataset(test::temp_dir("loader_rss"), 16);
  Loader loader(records, small_options(2));
  size_t after2 = 0;
  for (int e = 0; e < 20; ++e) {
    loader.start_epoch(e);
    while (loader.next()) {
    }
    if (e == 1) after2 = rss_bytes();
  }
  const long growth = static_cast<long>(rss_bytes()) - static_cast<long>(after2);
  EXPECT_LT(growth, 3L << 20) << "RSS grew by " << growth << " bytes between epoch 2 and epoch 20";
}

TEST(ImageCache, ResizedSizeFollowsLoadImage) {
  EXPECT_EQ(resized_size(640, 480, 320), cv::Size(320, 240));
  EXPECT_EQ(resized_size(500, 375, 640), cv::Size(640, 480));
  EXPECT_EQ(resized_size(333, 500, 640), cv::Size(426, 640));  // int() truncates 426.24
  EXPECT_EQ(resized_size(640, 427, 640), cv::Size(640, 427));  // r == 1: untouched
  // Ultralytics: ceil, capped at the size.
  EXPECT_EQ(resized_size(333, 500, 640, ResizeRule::ultralytics_train), cv::Size(427, 640));
  EXPECT_EQ(resized_size(640, 480, 320, ResizeRule::ultralytics_train), cv::Size(320, 240));
  EXPECT_EQ(resized_size(384, 288, 192, ResizeRule::ultralytics_train), cv::Size(192, 144));
  EXPECT_EQ(resized_size(1001, 3, 100, ResizeRule::ultralytics_train), cv::Size(100, 1));  // ceil(0.2997)
}

TEST(ImageCache, RamCacheHoldsWhatDecodingGives) {
  const auto records = tiny_dataset(test::temp_dir("cache_ram"), 7);
  const ParallelFor serial = [](size_t n, const std::function<void(size_t)>& fn) {
    for (size_t i = 0; i < n; ++i) fn(i);
  };
  for (ResizeRule rule : {ResizeRule::yolov5_train, ResizeRule::yolov5_val, ResizeRule::ultralytics_val, ResizeRule::ultralytics_train}) {
    const auto cache = ImageCache::build_ram(records, 64, rule, serial);
    ASSERT_NE(cache, nullptr);
    ASSERT_EQ(cache->size(), records.size());
    for (size_t i = 0; i < records.size(); ++i) {
      int h = 0, w = 0, h0 = 0, w0 = 0;
      const cv::Mat cached = cache->image(i, &h, &w);
      const cv::Mat decoded = load_image_resized(records[i].image_path, 64, rule, &h0, &w0);
      EXPECT_EQ(h, h0);
      EXPECT_EQ(w, w0);
      ASSERT_EQ(cached.size(), decoded.size());
      EXPECT_EQ(cv::norm(cached, decoded, cv::NORM_INF), 0) << records[i].image_path;
    }
  }
  // Through the loader: same batches as decoding every time, on the mosaic, letterbox + warp (rect) and
  // validation paths. The cache is read-only memory, so a path that wrote into its source would crash.
  for (int mode = 0; mode < 3; ++mode) {
    LoaderOptions o = small_options(2);
    o.augment = mode < 2, o.rect = mode == 1;
    const auto plain = run_epoch(records, o, 4);
    o.cache = CacheMode::ram;
    Loader cached(records, o);
    ASSERT_NE(cached.cache(), nullptr);
    EXPECT_TRUE(run_epoch(cached, 4) == plain);
  }
}

TEST(ImageCache, AutoCachesInRamOnlyWhatIsSmallNextToFreeMemory) {
  std::string why;
  const size_t gb = size_t{1} << 30;
  EXPECT_EQ(choose_auto_cache(2 * gb, 16 * gb, &why), CacheMode::ram);  // exactly 1/8
  EXPECT_NE(why.find("caching images in RAM"), std::string::npos) << why;
  EXPECT_NE(why.find("--cache none"), std::string::npos) << why;
  EXPECT_EQ(choose_auto_cache(2 * gb + 1, 16 * gb, &why), CacheMode::none);
  EXPECT_NE(why.find("not caching"), std::string::npos) << why;
  EXPECT_EQ(choose_auto_cache(1, 0, &why), CacheMode::none);  // MemAvailable unreadable: never guess
}

TEST(ImageCache, RamCacheRefusesWhatDoesNotFit) {
  std::vector<ImageRecord> records(4);
  for (auto& r : records) r.image_path = "/nonexistent.jpg", r.width = r.height = 1 << 20;
  EXPECT_GT(estimate_cache_bytes(records, 1 << 20), mem_available_bytes());
  const ParallelFor fail = [](size_t, const std::function<void(size_t)>&) { FAIL() << "must not decode"; };
  EXPECT_EQ(ImageCache::build_ram(records, 1 << 20, ResizeRule::yolov5_train, fail), nullptr);
}

struct timespec mtime_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_mtim;
}

TEST(ImageCache, DiskCacheIsSharedReusedAndInvalidated) {
  const std::string root = test::temp_dir("cache_disk");
  fs::create_directories(root + "/images");
  auto records = tiny_dataset(root + "/images", 6);
  LoaderOptions o = small_options(2);
  const auto plain = run_epoch(records, o, 2);
  o.cache = CacheMode::disk;

  std::string path;
  {
    Loader first(records, o);
    ASSERT_NE(first.cache(), nullptr);
    path = first.cache()->path();
    EXPECT_FALSE(first.cache()->reused());
    EXPECT_EQ(fs::path(path).parent_path(), fs::path(root));  // beside the data
    EXPECT_TRUE(run_epoch(first, 2) == plain);
  }
  const struct timespec written = mtime_of(path);
  {
    Loader second(records, o);
    ASSERT_NE(second.cache(), nullptr);
    EXPECT_EQ(second.cache()->path(), path);
    EXPECT_TRUE(second.cache()->reused());
    EXPECT_TRUE(run_epoch(second, 2) == plain);
  }
  const struct timespec reread = mtime_of(path);
  EXPECT_EQ(reread.tv_sec, written.tv_sec);
  EXPECT_EQ(reread.tv_nsec, written.tv_nsec);
  for (const auto& entry : fs::directory_iterator(root))  // no temporary file left behind
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << entry.path();

  // Replace one image (same size, new pixels): the cache is rebuilt and gives the new pixels.
  records[3] = write_image(root + "/images", 3, records[3].width, records[3].height, /*seed=*/99);
  const struct timespec later = {reread.tv_sec + 5, 0};
  const struct timespec times[2] = {later, later};
  ASSERT_EQ(utimensat(AT_FDCWD, records[3].image_path.c_str(), times, 0), 0);
  Loader third(records, o);
  ASSERT_NE(third.cache(), nullptr);
  EXPECT_EQ(third.cache()->path(), path);
  EXPECT_FALSE(third.cache()->reused());
  int h = 0, w = 0, h0 = 0, w0 = 0;
  const cv::Mat cached = third.cache()->image(3, &h, &w);
  const cv::Mat decoded = load_image_resized(records[3].image_path, 64, ResizeRule::yolov5_train, &h0, &w0);
  EXPECT_EQ(cv::norm(cached, decoded, cv::NORM_INF), 0);
  o.cache = CacheMode::none;
  EXPECT_TRUE(run_epoch(third, 2) == run_epoch(records, o, 2));
}

// A cache file damaged after it was written (a byte of pixels flipped on disk, or the file cut short
// by a full disk or an interrupted copy) is never trusted: it is rebuilt, and the batches are the
// bytes the images decode to.
TEST(ImageCache, DamagedOrTruncatedDiskCacheIsRebuilt) {
  const std::string root = test::temp_dir("cache_damaged");
  fs::create_directories(root + "/images");
  const auto records = tiny_dataset(root + "/images", 6);
  LoaderOptions o = small_options(2);
  const auto plain = run_epoch(records, o, 1);
  o.cache = CacheMode::disk;
  std::string path;
  {
    Loader first(records, o);
    ASSERT_NE(first.cache(), nullptr);
    path = first.cache()->path();
  }
  const auto size = fs::file_size(path);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(size - 100));
    const char c = static_cast<char>(f.get());
    f.seekp(static_cast<std::streamoff>(size - 100));
    f.put(static_cast<char>(c ^ 0x5a));  // a pixel of the last image, same file size
  }
  {
    Loader second(records, o);
    ASSERT_NE(second.cache(), nullptr);
    EXPECT_FALSE(second.cache()->reused()) << "a cache whose pixels changed was trusted";
    EXPECT_TRUE(run_epoch(second, 1) == plain);
  }
  {
    Loader third(records, o);  // the rebuilt file is whole again
    EXPECT_TRUE(third.cache()->reused());
  }
  fs::resize_file(path, size - 4096);
  Loader fourth(records, o);
  ASSERT_NE(fourth.cache(), nullptr);
  EXPECT_FALSE(fourth.cache()->reused()) << "a truncated cache was trusted";
  EXPECT_TRUE(run_epoch(fourth, 1) == plain);
}

TEST(ImageCache, DiskCacheGoesToTheUserCacheWhenTheDataIsReadOnly) {
  const std::string root = test::temp_dir("cache_ro");
  fs::create_directories(root + "/data/images");
  fs::create_directories(root + "/xdg");
  const auto records = tiny_dataset(root + "/data/images", 3);
  fs::permissions(root + "/data", fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                  fs::perm_options::remove);
  const char* old = std::getenv("XDG_CACHE_HOME");
  const std::string saved = old ? old : "";
  setenv("XDG_CACHE_HOME", (root + "/xdg").c_str(), 1);
  LoaderOptions o = small_options(1);
  o.cache = CacheMode::disk;
  {
    Loader loader(records, o);
    ASSERT_NE(loader.cache(), nullptr);
    EXPECT_EQ(loader.cache()->path().rfind(root + "/xdg/kestrel/images/", 0), 0u) << loader.cache()->path();
  }
  if (old) setenv("XDG_CACHE_HOME", saved.c_str(), 1); else unsetenv("XDG_CACHE_HOME");
  fs::permissions(root + "/data", fs::perms::owner_write, fs::perm_options::add);
}

TEST(Loader, Coco128PartialTileDecodesGiveTheSameBatches) {
  KESTREL_REQUIRE_SHARED(yaml, "data/coco128/coco128.yaml");
  const DatasetConfig cfg = load_dataset_config(yaml);
  const std::vector<ImageRecord> records = build_index(cfg.train, cfg.nc).records;
  for (int img : {320, 640}) {  // decoded at 1/2, and at full size
    LoaderOptions o;
    o.img_size = img, o.batch_size = 16, o.workers = 2, o.seed = 3;
    Loader loader(records, o);
    loader.start_epoch(0);
    std::vector<BatchCopy> partial;
    for (int k = 0; k < 2; ++k) {
      const Batch* b = loader.next();
      ASSERT_NE(b, nullptr);
      partial.emplace_back(*b);
    }
    o.partial_decode = false;
    Loader whole(records, o);
    whole.start_epoch(0);
    for (int k = 0; k < 2; ++k) {
      const Batch* b = whole.next();
      ASSERT_NE(b, nullptr);
      EXPECT_TRUE(partial[k] == BatchCopy(*b)) << "img " << img << " batch " << k;
    }
  }
}

TEST(Loader, Coco128Smoke) {
  KESTREL_REQUIRE_SHARED(yaml, "data/coco128/coco128.yaml");
  const DatasetConfig cfg = load_dataset_config(yaml);
  DatasetIndex index = build_index(cfg.train, cfg.nc);
  ASSERT_EQ(index.records.size(), 128u);
  LoaderOptions o;
  o.img_size = 320, o.batch_size = 16, o.workers = 2;
  Loader loader(std::move(index.records), o);
  EXPECT_EQ(loader.batches_per_epoch(), 8u);
  loader.start_epoch(0);
  for (int k = 0; k < 2; ++k) {
    const Batch* b = loader.next();
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->n, 16);
    EXPECT_EQ(b->h, 320);
    EXPECT_EQ(b->w, 320);
    EXPECT_GT(b->num_labels(), 0u);
    for (size_t r = 0; r < b->num_labels(); ++r) {
      const float* row = &b->labels[r * 6];
      EXPECT_GE(row[0], 0);
      EXPECT_LT(row[0], 16);
      EXPECT_LT(row[1], 80);
      for (int c = 2; c < 6; ++c) {
        EXPECT_GE(row[c], 0);
        EXPECT_LE(row[c], 1);
      }
    }
  }
}

}  // namespace
}  // namespace kestrel
