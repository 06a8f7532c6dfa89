// The threaded batch loader (see loader.h for the scheduling rules).
#include "data/loader/loader.h"

#include "core/numpy_ops.h"

#include <malloc.h>
#include <pthread.h>

#include <opencv2/core.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "data/io/image_decode.h"
#include "data/augment/rng.h"
#include "core/parallel_for.h"

namespace kestrel {
namespace {

// Stream of the generator that shuffles an epoch, apart from every sample's stream.
constexpr uint64_t kShuffleIndex = UINT64_MAX;
constexpr uint64_t kShuffleStream = 1;

// BGR HWC -> RGB CHW: OpenCV's split writes each channel straight into its plane of the batch.
void write_rgb_planes(const cv::Mat& bgr, uint8_t* dst) {
  const size_t plane = bgr.total();
  cv::Mat planes[3] = {cv::Mat(bgr.size(), CV_8UC1, dst + 2 * plane), cv::Mat(bgr.size(), CV_8UC1, dst + plane),
                       cv::Mat(bgr.size(), CV_8UC1, dst)};
  cv::split(bgr, planes);
}

// Every image load and sample allocates and frees buffers of about a megabyte. glibc's defaults hand
// such blocks back to the kernel (munmap, or trimming a thread's heap), so the next one faults its
// pages in again: without a cache that was ~40% of the loader's CPU time (coco128, 640: 21.5 -> 16.5 ms
// of CPU per image, 2.4x fewer page faults). Keeping freed memory in the heap is process-wide; it also
// spares the trainer's per-step tensor allocations the same faults.
void keep_freed_memory_in_heap() {
#ifdef __GLIBC__
  static const bool done = [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's maximum; larger blocks are still mapped
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    return true;
  }();
  (void)done;
#endif
}

}  // namespace

Loader::Loader(std::vector<ImageRecord> records, LoaderOptions opts) : records_(std::move(records)), opts_(opts) {
  if (opts_.img_size <= 0 || opts_.batch_size <= 0 || opts_.stride <= 0 || opts_.workers < 0)
    throw std::invalid_argument("Loader: img_size, batch_size and stride must be positive, workers >= 0");
  if (records_.size() > UINT32_MAX) throw std::invalid_argument("Loader: more than 2^32 images");
  if (opts_.shards < 1 || opts_.shard < 0 || opts_.shard >= opts_.shards)
    throw std::invalid_argument("Loader: shard must be in [0, shards)");
  if (opts_.rect && opts_.shards > 1)
    throw std::invalid_argument("--rect batches cannot be split over several processes: train without --rect");
  if (opts_.rect) {
    opts_.shuffle = false;  // as YOLOv5: rect batches depend on the sorted order
    compute_rect_shapes();
  }
  mosaic_next_ = mosaic_now_ = opts_.use_mosaic;
  keep_freed_memory_in_heap();
  // The loader parallelises over samples; OpenCV's own thread pool (TBB) inside each warp or colour
  // conversion would only add threads that compete with the workers and with the model's compute.
  cv::setNumThreads(0);
  source_ = ImageSource([this](size_t i, const DecodeRegion* needed) { return load_image(i, needed); });
  if (opts_.partial_decode) source_.loaded_size = [this](size_t i) { return loaded_size(i); };

  // Batch buffers: prefetch batches in flight while the consumer holds one, sized for the largest batch.
  size_t max_pixels = 0;
  for (size_t b = 0; b < batches_per_epoch(); ++b) {
    const auto [h, w] = batch_shape(b);
    const size_t n = std::min<size_t>(opts_.batch_size, epoch_size() - b * opts_.batch_size);
    max_pixels = std::max(max_pixels, n * 3 * h * w);
  }
  const int slots = opts_.workers == 0 ? 1 : std::max(1, opts_.prefetch) + 1;
  std::pmr::memory_resource* memory = opts_.batch_memory ? opts_.batch_memory : std::pmr::get_default_resource();
  slots_.reserve(slots);
  for (int k = 0; k < slots; ++k) slots_.emplace_back(memory);
  for (auto& s : slots_) {
    s.batch.pixels.resize(max_pixels);  // touches every page now rather than in the first epoch
    s.sample_labels.resize(opts_.batch_size);
  }

  worker_state_.push_back(std::make_unique<Worker>());  // the inline worker, always last
  try {
    start_threads(opts_.workers);
    if (opts_.cache != CacheMode::none) build_cache();
  } catch (...) {
    stop_threads();  // no destructor runs for a half-built object
    throw;
  }
}

Loader::~Loader() { stop_threads(); }

void Loader::start_threads(int n) {
  // worker_state_ holds one Worker per thread, then the inline worker.
  std::vector<std::unique_ptr<Worker>> fresh(static_cast<size_t>(n));
  for (auto& w : fresh) w = std::make_unique<Worker>();
  worker_state_.insert(worker_state_.begin(), std::make_move_iterator(fresh.begin()), std::make_move_iterator(fresh.end()));
  threads_.reserve(n);
  for (int i = 0; i < n; ++i)
    threads_.emplace_back([this, i] {
      // The name is how the profiler's sampler tells loader CPU from compute CPU (/proc/self/task/*/comm).
      pthread_setname_np(pthread_self(), ("kestrel-load" + std::to_string(i)).substr(0, 15).c_str());
      worker_main(*worker_state_[i]);
    });
}

void Loader::set_workers(int workers) {
  if (workers < 1 || threads_.empty()) throw std::invalid_argument("Loader::set_workers: needs >= 1 and a threaded loader");
  cancel_epoch();
  stop_threads();
  Worker& inline_worker = *worker_state_.back();  // keeps the stage times of the threads that go
  for (size_t i = 0; i + 1 < worker_state_.size(); ++i) inline_worker.times += worker_state_[i]->times;
  worker_state_.erase(worker_state_.begin(), worker_state_.end() - 1);
  stop_ = false;
  opts_.workers = workers;
  start_threads(workers);
}

void Loader::stop_threads() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    ++generation_;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

size_t Loader::size() const { return records_.size(); }

size_t Loader::epoch_size() const {
  return opts_.shards > 1 ? (records_.size() + opts_.shards - 1) / opts_.shards : records_.size();
}

size_t Loader::batches_per_epoch() const { return (epoch_size() + opts_.batch_size - 1) / opts_.batch_size; }

const std::vector<ImageRecord>& Loader::records() const { return records_; }

void Loader::set_mosaic(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  mosaic_next_ = on;
}

std::pair<int, int> Loader::batch_shape(size_t b) const {
  return opts_.rect ? rect_shapes_[b] : std::make_pair(opts_.img_size, opts_.img_size);
}

StageTimes Loader::stage_times() const {
  std::lock_guard<std::mutex> lock(mu_);
  StageTimes total;
  for (const auto& w : worker_state_) total += w->times;
  return total;
}

// YOLOv5's LoadImagesAndLabels rect setup: sort by h/w; a batch whose ratios are all < 1 gets shape
// (maxi, 1), all > 1 gets (1, 1/mini), else (1, 1); shape = ceil(s * img_size / stride + pad) * stride.
// The sort is numpy's introsort, ties included: an image whose ratio equals its neighbours' lands in
// the same batch as in YOLOv5, so it gets the same padding (and the same predictions).
void Loader::compute_rect_shapes() {
  std::vector<double> ar(records_.size());
  for (size_t i = 0; i < records_.size(); ++i) {
    int w = records_[i].width, h = records_[i].height;
    if ((w <= 0 || h <= 0) && !read_image_size(records_[i].image_path, &w, &h))
      throw ImageError("cannot read the size of " + records_[i].image_path);
    ar[i] = static_cast<double>(h) / static_cast<double>(w);
  }
  const std::vector<int64_t> idx = numpy::argsort_quick(ar);
  std::vector<ImageRecord> sorted;
  sorted.reserve(records_.size());
  for (size_t i : idx) sorted.push_back(std::move(records_[i]));
  records_ = std::move(sorted);

  const size_t bs = opts_.batch_size;
  rect_shapes_.clear();
  for (size_t b = 0; b < batches_per_epoch(); ++b) {
    const double mini = ar[idx[b * bs]], maxi = ar[idx[std::min(records_.size(), (b + 1) * bs) - 1]];
    double sh = 1, sw = 1;
    if (maxi < 1)
      sh = maxi;
    else if (mini > 1)
      sw = 1 / mini;
    auto side = [&](double s) { return static_cast<int>(std::ceil(s * opts_.img_size / opts_.stride + opts_.pad)) * opts_.stride; };
    rect_shapes_.emplace_back(side(sh), side(sw));
  }
}

void Loader::build_cache() {
  // The loader threads are idle until the first epoch: as many short-lived ones fill the cache.
  const ParallelOptions po{static_cast<unsigned>(threads_.size() + 1)};
  const ParallelFor parallel_for = [po](size_t n, const std::function<void(size_t)>& fn) { kestrel::parallel_for(n, fn, po); };
  cache_ = opts_.cache == CacheMode::ram ? ImageCache::build_ram(records_, opts_.img_size, resize_rule(opts_.ultralytics, opts_.augment), parallel_for)
                                         : ImageCache::open_or_build_disk(records_, opts_.img_size, resize_rule(opts_.ultralytics, opts_.augment),
                                                                                         parallel_for);
}

LoadedImage Loader::load_image(size_t index, const DecodeRegion* needed) const {
  ScopedStage timer(Stage::load);
  LoadedImage out;
  out.labels = &records_[index].labels;
  if (cache_)
    out.bgr = cache_->image(index, &out.orig_h, &out.orig_w);
  else
    out.bgr = load_image_resized(records_[index].image_path, opts_.img_size, resize_rule(opts_.ultralytics, opts_.augment),
                                 &out.orig_h, &out.orig_w, true, needed);
  return out;
}

// From the index's header sizes; unknown (so tiles load whole) when cached, as nothing is decoded then.
cv::Size Loader::loaded_size(size_t index) const {
  const ImageRecord& r = records_[index];
  if (cache_ || r.width <= 0 || r.height <= 0) return {};
  return resized_size(r.width, r.height, opts_.img_size, resize_rule(opts_.ultralytics, opts_.augment));
}

bool Loader::sample_claimable() const {
  return epoch_active_ && next_item_ < epoch_size() &&
         next_item_ / opts_.batch_size < released_ + slots_.size();
}

void Loader::worker_main(Worker& w) {
  stage_sink() = &w.times;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || sample_claimable(); });
    if (stop_) return;
    const size_t item = next_item_++;
    const uint64_t generation = generation_;
    Slot& slot = slot_of(item / opts_.batch_size);
    if (item % opts_.batch_size == 0) prepare_slot(slot, item / opts_.batch_size);
    ++busy_;
    lock.unlock();
    std::exception_ptr error;
    try {
      build_sample(item, slot, w);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    bool notify = false;
    if (generation == generation_) {
      if (error && !slot.error) slot.error = error;
      if (--slot.remaining == 0) {
        lock.unlock();
        finalize(slot);  // no one else touches a slot whose samples are all written
        lock.lock();
        slot.ready = notify = true;
      }
    }
    if (--busy_ == 0 && !epoch_active_) notify = true;  // start_epoch/cancel_epoch is draining
    if (notify) done_cv_.notify_all();
  }
}

void Loader::prepare_slot(Slot& slot, size_t b) {
  const auto [h, w] = batch_shape(b);
  const size_t n = std::min<size_t>(opts_.batch_size, epoch_size() - b * opts_.batch_size);
  Batch& batch = slot.batch;
  batch.n = static_cast<int>(n), batch.h = h, batch.w = w;
  batch.pixels.resize(n * 3 * h * w);  // within the reserved capacity: never reallocates
  batch.paths.resize(n);
  batch.shapes.resize(n);
  slot.batch_index = b;
  slot.remaining = n;
  slot.ready = false;
  slot.error = nullptr;
}

void Loader::build_sample(size_t item, Slot& slot, Worker& w) {
  const size_t b = item / opts_.batch_size, j = item % opts_.batch_size;
  const size_t index = order_[item];
  const auto [h, w_] = batch_shape(b);
  const uint64_t t0 = steady_ns(), load0 = w.times[Stage::load];
  SampleOptions geometry;
  geometry.ultralytics = opts_.ultralytics;
  if (opts_.augment) {
    SampleRng rng(opts_.seed, static_cast<uint64_t>(epoch_), index);
    make_train_sample(source_, index, records_.size(), opts_.hyp, opts_.img_size, h, w_, mosaic_now_ && !opts_.rect, rng,
                      w.sample, geometry);
  } else {
    make_letterbox_sample(source_.load, index, h, w_, w.sample, geometry);
  }
  constexpr int kAugment = static_cast<int>(Stage::augment);
  w.times.ns[kAugment] += steady_ns() - t0 - (w.times[Stage::load] - load0);
  ++w.times.calls[kAugment];

  ScopedStage timer(Stage::collate);
  const cv::Mat& img = w.sample.bgr;
  if (img.rows != h || img.cols != w_ || img.type() != CV_8UC3)
    throw std::logic_error("sample of " + records_[index].image_path + " is " + std::to_string(img.cols) + "x" +
                           std::to_string(img.rows) + ", batch expects " + std::to_string(w_) + "x" + std::to_string(h));
  write_rgb_planes(img, slot.batch.pixels.data() + j * 3 * h * w_);
  slot.sample_labels[j] = w.sample.labels;
  slot.batch.paths[j] = records_[index].image_path;
  slot.batch.shapes[j] = w.sample.info;
}

// YOLOv5's collate_fn: label rows (image index in batch, cls, x, y, w, h), image by image.
void Loader::finalize(Slot& slot) {
  ScopedStage timer(Stage::collate);
  auto& out = slot.batch.labels;
  out.clear();
  for (int j = 0; j < slot.batch.n; ++j)
    for (const Label& l : slot.sample_labels[j])
      out.insert(out.end(), {static_cast<float>(j), l.cls, l.x, l.y, l.w, l.h});
}

void Loader::cancel_epoch() {
  std::unique_lock<std::mutex> lock(mu_);
  drain(lock);
}

void Loader::drain(std::unique_lock<std::mutex>& lock) {
  ++generation_;
  epoch_active_ = false;
  done_cv_.wait(lock, [&] { return busy_ == 0; });  // samples in flight finish; their results are dropped
}

// DistributedSampler's split: the epoch's order padded with its own first images to a multiple of
// the shard count, then every shards-th position from this shard's. Batch b of all shards together
// holds the images of batch b of one process with shards x the batch, in the same order.
void Loader::shard_order() {
  const size_t n = order_.size(), per = epoch_size();
  std::vector<uint32_t> mine(per);
  for (size_t k = 0; k < per; ++k) mine[k] = order_[(k * opts_.shards + opts_.shard) % n];
  order_.swap(mine);
}

void Loader::start_epoch(int epoch, size_t first_batch) {
  std::unique_lock<std::mutex> lock(mu_);
  drain(lock);
  epoch_ = epoch;
  mosaic_now_ = mosaic_next_;
  order_.resize(records_.size());
  std::iota(order_.begin(), order_.end(), 0u);
  if (opts_.shuffle) {
    SampleRng rng(opts_.seed, static_cast<uint64_t>(epoch), kShuffleIndex, kShuffleStream);
    for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng.below(i)]);
  }
  if (opts_.shards > 1) shard_order();
  for (auto& s : slots_) s.batch_index = SIZE_MAX, s.ready = false, s.error = nullptr;
  released_ = next_batch_ = std::min(first_batch, batches_per_epoch());
  next_item_ = std::min(next_batch_ * static_cast<size_t>(opts_.batch_size), epoch_size());
  holding_ = false;
  epoch_active_ = true;
  work_cv_.notify_all();
}

const Batch* Loader::next() {
  if (threads_.empty()) return next_inline();
  std::unique_lock<std::mutex> lock(mu_);
  if (!epoch_active_) throw std::logic_error("Loader::next() without an epoch: call start_epoch() first");
  if (holding_) {
    holding_ = false;
    ++released_;
    work_cv_.notify_all();
  }
  if (next_batch_ >= batches_per_epoch()) return nullptr;
  Slot& slot = slot_of(next_batch_);
  const size_t b = next_batch_;
  done_cv_.wait(lock, [&] { return slot.ready && slot.batch_index == b; });
  ++next_batch_;
  holding_ = true;
  if (slot.error) std::rethrow_exception(slot.error);
  return &slot.batch;
}

// workers == 0: the calling thread builds each batch when asked for it.
const Batch* Loader::next_inline() {
  if (!epoch_active_) throw std::logic_error("Loader::next() without an epoch: call start_epoch() first");
  if (next_batch_ >= batches_per_epoch()) return nullptr;
  const size_t b = next_batch_++;
  Slot& slot = slots_.front();
  prepare_slot(slot, b);
  Worker& w = *worker_state_.back();
  StageTimes*& sink = stage_sink();
  StageTimes* const saved = sink;
  sink = &w.times;
  try {
    for (size_t item = b * opts_.batch_size; item < b * opts_.batch_size + slot.batch.n; ++item)
      build_sample(item, slot, w);
    finalize(slot);
  } catch (...) {
    sink = saved;
    throw;
  }
  sink = saved;
  return &slot.batch;
}

}  // namespace kestrel
