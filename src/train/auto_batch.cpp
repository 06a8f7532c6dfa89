// AutoBatch on a CPU (see auto_batch.h).
#include "train/auto_batch.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace kestrel {

int pick_batch(const std::vector<BatchProbe>& curve, double memory_limit) {
  if (curve.empty()) throw std::invalid_argument("pick_batch: no probes");
  double best = 0;
  for (const BatchProbe& p : curve)
    if (p.peak_bytes <= memory_limit) best = std::max(best, p.images_per_s);
  for (const BatchProbe& p : curve)  // in batch order: the smallest that is about as fast
    if (p.peak_bytes <= memory_limit && p.images_per_s >= (1 - kAutoBatchThroughputMargin) * best) return p.batch;
  return curve.front().batch;
}

bool probe_next_batch(const std::vector<BatchProbe>& curve, double memory_limit, int max_batch) {
  if (curve.empty()) return true;
  const BatchProbe& last = curve.back();
  if (last.batch * 2 > max_batch || last.peak_bytes > memory_limit) return false;
  if (curve.size() >= 2) {
    const BatchProbe& prev = curve[curve.size() - 2];
    const double per_image = (last.peak_bytes - prev.peak_bytes) / (last.batch - prev.batch);
    if (last.peak_bytes + per_image * last.batch > memory_limit) return false;
  }
  double best = 0;
  int slower_in_a_row = 0;
  for (const BatchProbe& p : curve) {
    slower_in_a_row = p.images_per_s < best ? slower_in_a_row + 1 : 0;
    best = std::max(best, p.images_per_s);
  }
  return slower_in_a_row < 2;
}

AutoBatchChoice auto_batch(const DetectionModelImpl& model, const StepBenchOptions& shape, int max_batch,
                           double memory_available) {
  AutoBatchChoice c;
  c.memory_limit = kAutoBatchMemoryShare * memory_available;
  StepBenchOptions o = shape;
  o.warmup = 1, o.steps = 2, o.optimizer = false;
  for (int b = 2; probe_next_batch(c.curve, c.memory_limit, std::max(2, max_batch)); b *= 2) {
    o.batch_size = b;
    const StepTimes t = measure_steps(model, o);
    c.curve.push_back({b, t.images_per_s, t.peak_bytes, t.spread});
  }
  c.batch = pick_batch(c.curve, c.memory_limit);
  std::string line = "AutoBatch (" + precision_name(shape.precision) + ", " + std::to_string(shape.img_size) + " px):";
  for (const BatchProbe& p : c.curve) {
    char probe[96];
    std::snprintf(probe, sizeof probe, " %d: %.1f img/s ±%.0f%% %.2f GB%s", p.batch, p.images_per_s, 50 * p.spread,
                  p.peak_bytes / 1e9, &p == &c.curve.back() ? "" : ",");
    line += probe;
  }
  char tail[120];
  std::snprintf(tail, sizeof tail, " -> batch %d, the smallest within 5%% of the best img/s, within %.1f GB (60%% of the memory available)",
                c.batch, c.memory_limit / 1e9);
  c.why = line + tail;
  return c;
}

}  // namespace kestrel
