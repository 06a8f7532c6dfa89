// The batch loader: a pool of threads that turns ImageRecords into ready Batches (uint8 RGB NCHW plus
// YOLOv5 collate_fn labels), a bounded number of batches ahead of the consumer.
// - Threads persist across epochs and block on condition variables when there is nothing to do.
// - Batch buffers ("slots", prefetch + 1 of them) are allocated once and reused; the consumer gets
//   batches strictly in order, each valid until its following next()/start_epoch().
// - Workers claim single samples (not whole batches), so several threads share the batch the consumer
//   waits for; each sample is written straight into its place in the slot.
// - Every random draw of a sample comes from SampleRng(seed, epoch, dataset index), and the epoch order
//   is a Fisher-Yates shuffle seeded by (seed, epoch): batches are byte-identical for any worker count.
// - Data parallel: each process reads a disjoint shard of that order (shard_order), so the job's
//   batches do not depend on scheduling, and a sample's augmentation not on which process builds it.
// - rect: YOLOv5's rectangular batches (images sorted by aspect ratio, one letterbox shape per batch,
//   no shuffle, no mosaic).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <thread>
#include <vector>

#include "core/hyp.h"
#include "data/loader/image_cache.h"
#include "data/augment/sample.h"
#include "data/loader/stage_timer.h"
#include "data/types.h"

namespace kestrel {

struct LoaderOptions {
  int img_size = 640, batch_size = 16, workers = 2, prefetch = 4, stride = 32;
  bool augment = true, rect = false, shuffle = true, use_mosaic = true;
  bool ultralytics = false;  // Ultralytics' resize rule for loading (data/io/image_decode.h), else YOLOv5's
  double pad = 0.0;
  uint64_t seed = 0;
  // Data parallel: this process reads shard `shard` of `shards` of every epoch (see shard_order).
  int shard = 0, shards = 1;
  CacheMode cache = CacheMode::none;
  // Uncached JPEG mosaic tiles: decode only the part the warp reads (DecodeRegion); same bytes out.
  bool partial_decode = true;
  // Where the batch buffers live: pinned host memory when batches go to a GPU (device/pinned_memory.h),
  // the heap when nullptr. It must outlive the loader.
  std::pmr::memory_resource* batch_memory = nullptr;
  Hyp hyp;
};

class Loader {
 public:
  // Starts the threads and, with a cache mode, fills (or maps) the cache on them before returning.
  // With rect the records are reordered by aspect ratio; records() gives the order used.
  Loader(std::vector<ImageRecord> records, LoaderOptions opts);
  // Cancels whatever is in flight and joins the threads (waits at most for the samples being built).
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  size_t size() const;        // images
  size_t epoch_size() const;  // images this process reads per epoch (its shard's)
  size_t batches_per_epoch() const;
  int batch_size() const { return opts_.batch_size; }
  // Order and per-sample randomness derive from (seed, epoch, index). Cancels an epoch still in flight.
  // first_batch > 0 skips the epoch's earlier batches (a resumed run): the rest are the same bytes.
  void start_epoch(int epoch, size_t first_batch = 0);
  // Stops the epoch in flight: waits for the samples being built, drops the rest. next() then needs a
  // start_epoch. (start_epoch does this itself.)
  void cancel_epoch();
  // Next batch in order, nullptr at epoch end; valid until the following next()/start_epoch().
  // A sample that failed (e.g. an unreadable image) makes next() rethrow its exception for that batch.
  const Batch* next();
  void set_mosaic(bool on);
  // Changes the number of loader threads (>= 1; the loader must have been built with threads).
  // Cancels the epoch in flight; stage times gathered so far are kept.
  void set_workers(int workers);
  int workers() const { return static_cast<int>(threads_.size()); }  // for close_mosaic schedules; takes effect at the next start_epoch
  const std::vector<ImageRecord>& records() const;

  // Letterbox shape (h, w) of batch b: img_size square, or the rect shape.
  std::pair<int, int> batch_shape(size_t b) const;
  // The image cache in use (nullptr with --cache none, or when it did not fit / could not be written).
  const ImageCache* cache() const { return cache_.get(); }
  // Stage times summed over all loader threads. Exact when no epoch is in flight (after next() gave
  // nullptr, after cancel_epoch, or before the first start_epoch).
  StageTimes stage_times() const;

 private:
  struct Slot {
    explicit Slot(std::pmr::memory_resource* memory) : batch(memory) {}
    Batch batch;
    std::vector<std::vector<Label>> sample_labels;  // per image of the batch, capacity reused
    size_t batch_index = SIZE_MAX;
    size_t remaining = 0;  // samples not yet written
    bool ready = false;
    std::exception_ptr error;
  };
  struct alignas(64) Worker {  // per-thread scratch
    Sample sample;
    StageTimes times;
  };

  void worker_main(Worker& w);
  void start_threads(int n);
  void stop_threads();
  void drain(std::unique_lock<std::mutex>& lock);
  bool sample_claimable() const;
  void build_cache();
  void compute_rect_shapes();
  void shard_order();
  void prepare_slot(Slot& slot, size_t b);
  void build_sample(size_t item, Slot& slot, Worker& w);
  static void finalize(Slot& slot);
  Slot& slot_of(size_t b) { return slots_[b % slots_.size()]; }
  const Batch* next_inline();
  LoadedImage load_image(size_t index, const DecodeRegion* needed) const;
  cv::Size loaded_size(size_t index) const;

  std::vector<ImageRecord> records_;
  LoaderOptions opts_;
  std::unique_ptr<ImageCache> cache_;
  std::vector<std::pair<int, int>> rect_shapes_;  // per batch, rect only
  ImageSource source_{ImageLoader()};
  std::vector<Slot> slots_;
  std::vector<std::unique_ptr<Worker>> worker_state_;  // one per thread, plus one for inline building
  std::vector<std::thread> threads_;

  // Written only under mu_ with no sample in flight; read by workers after claiming under mu_.
  std::vector<uint32_t> order_;
  int epoch_ = 0;
  bool mosaic_now_ = true;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // workers: something to claim, or stop
  std::condition_variable done_cv_;  // consumer: a batch is ready, the threads drained, a job finished
  bool stop_ = false;
  bool mosaic_next_ = true;
  bool epoch_active_ = false;
  uint64_t generation_ = 0;  // bumped by start_epoch/~Loader; work of an older generation is discarded
  size_t next_item_ = 0;     // next sample position of the epoch to claim
  size_t released_ = 0;      // batches the consumer has handed back
  size_t next_batch_ = 0;    // the batch next() returns next
  bool holding_ = false;     // the consumer holds batch next_batch_ - 1
  size_t busy_ = 0;          // samples being built right now
};

}  // namespace kestrel
