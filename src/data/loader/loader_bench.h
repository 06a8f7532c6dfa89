// `kestrel bench loader`: loader throughput on a data.yaml split, with a per-stage breakdown.
#pragma once
#include <string>

#include "data/loader/loader.h"

namespace kestrel {

struct LoaderBenchOptions {
  std::string data_yaml;
  bool val = false;      // bench the val split instead of train
  LoaderOptions loader;  // img_size, batch_size, workers, cache, augment, rect ...
  int epochs = 3;
  size_t batches = 0;    // > 0: stop after this many batches (epochs then only bounds it)
  int probe_images = 32; // images timed stage by stage on one thread (0: skip the probe)
};

struct LoaderBenchResult {
  double images_per_second = 0, setup_seconds = 0;
  size_t images = 0;
};

// Prints the setup (index, cache fill), images/s per epoch and overall, and ms per image for each stage:
// load/augment/collate as timed inside the loader threads, and read/decode/resize/mosaic-warp/colour from
// a single-thread probe over the first probe_images images.
LoaderBenchResult measure_loader(const LoaderBenchOptions& opts);
void run_loader_bench(const LoaderBenchOptions& opts);

}  // namespace kestrel
