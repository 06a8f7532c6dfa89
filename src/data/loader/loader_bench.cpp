// Loader throughput benchmark: runs the real Loader on a dataset split and reports images/s, the stage
// times the loader threads recorded, and a single-thread probe that splits those stages further.
#include "data/loader/loader_bench.h"

#include <sys/resource.h>

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <ctime>
#include <cstdio>
#include <stdexcept>

#include "data/index/dataset_config.h"
#include "data/io/dataset_files.h"
#include "data/io/image_decode.h"
#include "data/index/label_index.h"

namespace kestrel {
namespace {

double seconds_since(uint64_t t0) { return static_cast<double>(steady_ns() - t0) * 1e-9; }

// CPU time of the calling thread / of the whole process, in seconds: unlike wall time, not inflated
// when other processes compete for the cores.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
double process_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

// Milliseconds of CPU per call of each finer stage, measured on one thread over a few images.
struct ProbeTimes {
  double read = 0, decode = 0, resize = 0;  // per loaded image
  double warp = 0, colour = 0;              // per sample: mosaic/letterbox + warp, HSV + flips
};

ProbeTimes probe_stages(const std::vector<ImageRecord>& all, const LoaderOptions& o, int count) {
  const std::vector<ImageRecord> records(all.begin(), all.begin() + std::min<size_t>(count, all.size()));
  const double n = static_cast<double>(records.size());
  ProbeTimes p;
  // Each stage on its own, into reused buffers (so first-touch page faults of fresh buffers do not count).
  std::string bytes;
  double t0 = thread_cpu_seconds();
  for (const auto& r : records) {
    FileBytes file;  // files in folders and in packs alike
    std::string error;
    if (!read_file_bytes(r.image_path, &file, &error) || file.size() == 0)
      throw ImageError(error.empty() ? "empty image file " + r.image_path : error);
    bytes.assign(reinterpret_cast<const char*>(file.data()), file.size());  // the copy a read() makes
  }
  p.read = 1e3 * (thread_cpu_seconds() - t0) / n;
  std::vector<cv::Mat> raw(records.size()), images(records.size());  // as decoded / as loaded (untimed)
  std::vector<std::pair<int, int>> orig(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    decode_image_into(records[i].image_path, o.img_size, raw[i]);
    images[i] = load_image_resized(records[i].image_path, o.img_size, resize_rule(o.ultralytics, o.augment), &orig[i].first, &orig[i].second);
  }
  cv::Mat out;  // timed passes write into one warm buffer
  t0 = thread_cpu_seconds();
  for (const auto& r : records) decode_image_into(r.image_path, o.img_size, out);
  p.decode = std::max(0.0, 1e3 * (thread_cpu_seconds() - t0) / n - p.read);
  t0 = thread_cpu_seconds();
  for (size_t i = 0; i < records.size(); ++i)
    if (raw[i].size() != images[i].size()) {
      const double r = static_cast<double>(images[i].cols) / orig[i].second;
      const bool linear = resizes_linearly(resize_rule(o.ultralytics, o.augment), r);
      cv::resize(raw[i], out, images[i].size(), 0, 0, linear ? cv::INTER_LINEAR : cv::INTER_AREA);
    }
  p.resize = 1e3 * (thread_cpu_seconds() - t0) / n;

  // Augmentation on the decoded images, with and without the colour/flip part.
  const ImageLoader loader = [&](size_t i, const DecodeRegion*) {
    LoadedImage li;
    li.bgr = images[i], li.orig_h = orig[i].first, li.orig_w = orig[i].second, li.labels = &records[i].labels;
    return li;
  };
  Sample sample;
  SampleOptions geometry;
  geometry.ultralytics = o.ultralytics;
  auto run = [&](const Hyp& hyp) {
    const double start = thread_cpu_seconds();
    for (size_t i = 0; i < records.size(); ++i) {
      if (o.augment) {
        SampleRng rng(o.seed, 0, i);
        make_train_sample(loader, i, records.size(), hyp, o.img_size, o.img_size, o.img_size, o.use_mosaic && !o.rect, rng,
                          sample, geometry);
      } else {
        make_letterbox_sample(loader, i, o.img_size, o.img_size, sample, geometry);
      }
    }
    return 1e3 * (thread_cpu_seconds() - start) / n;
  };
  Hyp plain = o.hyp;
  plain.hsv_h = plain.hsv_s = plain.hsv_v = plain.fliplr = plain.flipud = 0;
  p.warp = run(plain);
  p.colour = std::max(0.0, run(o.hyp) - p.warp);
  return p;
}

double ms_per(const StageTimes& t, Stage s, double images) { return images > 0 ? 1e-6 * t[s] / images : 0; }

void print_setup(const LoaderBenchOptions& opts, const LoaderOptions& o, size_t images) {
  std::printf("loader bench: %s %s, %zu images, img %d, batch %d, workers %d, prefetch %d, cache %s, augment %s%s%s%s\n",
              opts.data_yaml.c_str(), opts.val ? "val" : "train", images, o.img_size, o.batch_size, o.workers,
              o.prefetch, cache_name(o.cache), o.augment ? "on" : "off",
              o.augment && o.use_mosaic && !o.rect ? ", mosaic" : "", o.rect ? ", rect" : "",
              o.cache == CacheMode::none && !o.partial_decode ? ", whole-tile decode" : "");
}

struct ConsumerTimes {
  size_t images = 0, batches = 0;
  uint64_t wait_ns = 0;  // time the consumer spent in next()
};

// Drains the loader for opts.epochs epochs (or opts.batches batches), printing each epoch's img/s.
ConsumerTimes drain_epochs(Loader& loader, const LoaderBenchOptions& opts) {
  ConsumerTimes c;
  for (int e = 0; e < opts.epochs && (opts.batches == 0 || c.batches < opts.batches); ++e) {
    loader.start_epoch(e);
    const uint64_t epoch0 = steady_ns();
    size_t epoch_images = 0;
    for (;;) {
      const uint64_t t = steady_ns();
      const Batch* b = loader.next();
      c.wait_ns += steady_ns() - t;
      if (!b) break;
      epoch_images += b->n, ++c.batches;
      if (opts.batches && c.batches >= opts.batches) break;
    }
    c.images += epoch_images;
    const double s = seconds_since(epoch0);
    std::printf("  epoch %d: %zu images in %.2f s = %.1f img/s\n", e, epoch_images, s, epoch_images / s);
  }
  return c;
}

// The loader threads' wall ms per image, by stage, and the img/s they could give.
void print_thread_stages(const StageTimes& t, bool cached, int threads) {
  const double samples = static_cast<double>(t.calls[static_cast<int>(Stage::augment)]);
  const double loads_per_sample = samples > 0 ? t.calls[static_cast<int>(Stage::load)] / samples : 0;
  const double thread_ms = ms_per(t, Stage::load, samples) + ms_per(t, Stage::augment, samples) + ms_per(t, Stage::collate, samples);
  std::printf("  loader threads, wall ms per image (%.2f image loads per image):\n", loads_per_sample);
  std::printf("    %-12s %7.3f  (%s)\n", "load", ms_per(t, Stage::load, samples),
              cached ? "cache lookups" : "read + decode + resize");
  std::printf("    %-12s %7.3f  (mosaic/letterbox, warp, colour, flips)\n", "augment", ms_per(t, Stage::augment, samples));
  std::printf("    %-12s %7.3f  (BGR HWC -> RGB CHW, labels)\n", "collate", ms_per(t, Stage::collate, samples));
  std::printf("    %-12s %7.3f  -> %d thread(s) could give %.0f img/s\n", "total", thread_ms, threads,
              thread_ms > 0 ? threads * 1e3 / thread_ms : 0.0);
  for (Stage s : {Stage::read, Stage::decode, Stage::resize, Stage::mosaic_warp, Stage::colour})
    if (t[s]) std::printf("    %-12s %7.3f  (timed inside the stage)\n", stage_name(s), ms_per(t, s, samples));
}

// One thread timing each stage on its own, scaled by the image loads a sample makes (mosaics load 4).
void print_probe(const std::vector<ImageRecord>& records, const LoaderOptions& o, int probe_images, bool cached,
                 const StageTimes& t) {
  const double samples = static_cast<double>(t.calls[static_cast<int>(Stage::augment)]);
  const double loads_per_sample = samples > 0 ? t.calls[static_cast<int>(Stage::load)] / samples : 0;
  const ProbeTimes p = probe_stages(records, o, probe_images);
  const double k = std::max(1.0, loads_per_sample);
  const char* paid = cached ? "  (not paid: cached)" : "";
  std::printf("  single-thread probe over %d images, CPU ms per image:\n", std::min<int>(probe_images, records.size()));
  std::printf("    %-12s %7.3f%s\n", "read", p.read * k, paid);
  std::printf("    %-12s %7.3f%s\n", "decode", p.decode * k,
              cached ? paid
              : o.partial_decode && o.augment && o.use_mosaic && !o.rect
                  ? "  (whole images; the loader decodes only what mosaics show)"
                  : "");
  std::printf("    %-12s %7.3f%s\n", "resize", p.resize * k, paid);
  std::printf("    %-12s %7.3f\n", o.augment ? "mosaic/warp" : "letterbox", p.warp);
  if (o.augment) std::printf("    %-12s %7.3f  (HSV + flips)\n", "colour", p.colour);
  std::printf("    %-12s %7.3f  (from the loader threads)\n", "collate", ms_per(t, Stage::collate, samples));
}

}  // namespace

LoaderBenchResult measure_loader(const LoaderBenchOptions& opts) {
  LoaderBenchResult result;
  const uint64_t setup0 = steady_ns();
  const DatasetConfig cfg = load_dataset_config(opts.data_yaml);
  DatasetIndex index = build_index(opts.val ? cfg.val : cfg.train, cfg.nc);
  const std::vector<ImageRecord> probe_records = index.records;
  const double index_s = seconds_since(setup0);
  LoaderOptions o = opts.loader;
  if (opts.val) o.augment = false;  // the val split is letterboxed, as validation loads it
  print_setup(opts, o, index.records.size());
  const uint64_t build0 = steady_ns();
  Loader loader(std::move(index.records), o);
  result.setup_seconds = seconds_since(setup0);
  std::printf("  OpenCV threads %d; index %.2f s%s; loader start %.2f s", cv::getNumThreads(), index_s, index.from_cache ? " (cached)" : "", seconds_since(build0));
  if (const ImageCache* c = loader.cache())
    std::printf(" (%s cache %.2f GB%s)", c->path().empty() ? "ram" : "disk", c->bytes() / 1e9, c->reused() ? ", reused" : "");
  std::printf("\n");

  const StageTimes before = loader.stage_times();
  const uint64_t run0 = steady_ns();
  const double cpu0 = process_cpu_seconds();
  const ConsumerTimes c = drain_epochs(loader, opts);
  result.images = c.images;
  const double run_s = seconds_since(run0), cpu_ms = 1e3 * (process_cpu_seconds() - cpu0) / std::max<size_t>(1, result.images);
  loader.cancel_epoch();  // a partial epoch's samples in flight settle before the times are read
  const StageTimes t = loader.stage_times() - before;
  result.images_per_second = result.images / run_s;
  std::printf("  overall: %zu images in %.2f s = %.1f img/s (consumer waited %.1f ms per batch)\n", result.images,
              run_s, result.images_per_second, c.batches ? 1e-6 * c.wait_ns / c.batches : 0.0);
  const int threads = std::max(1, o.workers);
  std::printf("  process CPU: %.2f ms per image -> %.0f img/s if %d core(s) were free for the loader\n", cpu_ms,
              cpu_ms > 0 ? threads * 1e3 / cpu_ms : 0.0, threads);
  print_thread_stages(t, loader.cache() != nullptr, threads);
  if (opts.probe_images > 0 && !probe_records.empty())
    print_probe(probe_records, o, opts.probe_images, loader.cache() != nullptr, t);
  return result;
}

void run_loader_bench(const LoaderBenchOptions& opts) { measure_loader(opts); }

}  // namespace kestrel
