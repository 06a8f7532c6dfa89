// --batch-size -1: AutoBatch. On a CPU, training steps are timed at doubling batch sizes and the
// smallest batch within 5% of the best images/s whose measured peak memory stays within 60% of the
// memory available (the share YOLOv5 aims at on a GPU) is chosen: a CPU's curve is flat past a few
// images, and a larger batch there buys nothing but fewer optimizer steps; the probe stops early once memory would pass the
// limit or throughput has fallen twice in a row. The curve is printed with the choice. On a GPU the
// memory is the device's: the caching allocator's peak reserved bytes of a step (from an empty
// cache, as YOLOv5's autobatch reads them) against its free memory (device/device.h).
#pragma once
#include <string>
#include <vector>

#include "model/detection_model.h"
#include "train/step_bench.h"

namespace kestrel {

struct BatchProbe {
  int batch = 0;
  double images_per_s = 0;
  double peak_bytes = 0;
  double spread = 0;  // the range of its timed steps, relative to their median
};

struct AutoBatchChoice {
  int batch = 16;
  std::vector<BatchProbe> curve;
  double memory_limit = 0;  // bytes
  std::string why;          // the curve and the choice, one line
};

constexpr double kAutoBatchMemoryShare = 0.6;

constexpr double kAutoBatchThroughputMargin = 0.05;

// The choice from a measured curve: among probes within the memory limit, the smallest batch whose
// images/s is within kAutoBatchThroughputMargin of the best (the smallest probe when none fits).
// (A probe's printed range is not added to the margin: widened so, it chose 32 where the run's
// steps made 64 11% faster, yolov5n at 320 on coco128, bench/auto_choices.py.)
// Pure, for tests.
int pick_batch(const std::vector<BatchProbe>& curve, double memory_limit);

// Whether probing should go on after `curve` (doubling the last batch): not past max_batch, not
// when the next batch's memory, extrapolated linearly from the last two probes, passes the limit,
// not after two probes in a row slower than the best.
bool probe_next_batch(const std::vector<BatchProbe>& curve, double memory_limit, int max_batch);

// Measures the curve on the model at the run's image size, precision and device (shape.batch_size is
// ignored) from batch 2 up to max_batch (the training set's size), within memory_available bytes.
AutoBatchChoice auto_batch(const DetectionModelImpl& model, const StepBenchOptions& shape, int max_batch,
                           double memory_available);

}  // namespace kestrel
