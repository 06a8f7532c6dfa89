// Loader thread-count search for --workers auto.
#include "data/loader/worker_tuning.h"
#include "core/elapsed.h"
#include "core/sample_stats.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace kestrel {

namespace {
// Images per second building the first `batches` batches of epoch 0 from an empty queue: the time
// covers the whole pipeline filling up, so prefetched batches cannot flatter the figure.
double probe(Loader& loader, int workers, size_t batches) {
  loader.set_workers(workers);
  const auto t0 = std::chrono::steady_clock::now();
  loader.start_epoch(0);
  size_t images = 0;
  for (size_t b = 0; b < batches; ++b) {
    const Batch* batch = loader.next();
    if (!batch) break;
    images += static_cast<size_t>(batch->n);
  }
  const double seconds = seconds_since(t0);
  loader.cancel_epoch();
  return seconds > 0 ? images / seconds : 0;
}
}  // namespace

int knee_of(const std::vector<WorkerProbe>& curve, double noise) {
  double best = 0;
  for (const auto& p : curve) best = std::max(best, p.images_per_second);
  for (const auto& p : curve)
    if (p.images_per_second >= (1 - noise) * best) return p.workers;
  return curve.empty() ? 1 : curve.front().workers;
}

WorkerChoice choose_workers(Loader& loader, int max_workers, double noise) {
  max_workers = std::max(1, max_workers);
  // Enough batches to outlast the prefetch queue's filling, about 100 images at least.
  const size_t batch_size = static_cast<size_t>(loader.batch_size());
  const size_t batches = std::min(loader.batches_per_epoch(), std::max<size_t>(6, (96 + batch_size - 1) / batch_size));
  probe(loader, max_workers, batches);  // warm-up: page cache, decoder handles, allocator
  std::vector<std::vector<double>> passes;  // images/s of each count, one figure a pass
  double best = 0;
  for (int w = 1, since_gain = 0; w <= max_workers && since_gain < 2; ++w) {
    const double ips = probe(loader, w, batches);
    passes.push_back({ips});
    since_gain = ips > best * (1 + noise) ? 0 : since_gain + 1;
    best = std::max(best, ips);
  }
  for (int w = static_cast<int>(passes.size()); w >= 1; --w) passes[w - 1].push_back(probe(loader, w, batches));
  WorkerChoice choice;
  choice.noise = noise;
  for (size_t i = 0; i < passes.size(); ++i) {
    const SampleSummary s = summarize_samples(passes[i]);
    choice.curve.push_back({static_cast<int>(i) + 1, s.median, s.spread});
    choice.noise = std::max(choice.noise, s.spread / 2);
  }
  choice.workers = knee_of(choice.curve, choice.noise);
  loader.set_workers(choice.workers);
  return choice;
}

std::string format_worker_curve(const WorkerChoice& choice) {
  std::string s = "workers";
  char buf[96];
  for (size_t i = 0; i < choice.curve.size(); ++i) {
    const WorkerProbe& p = choice.curve[i];
    std::snprintf(buf, sizeof buf, "%s %d: %.0f img/s ±%.0f%%", i ? " |" : "", p.workers, p.images_per_second, 50 * p.spread);
    s += buf;
  }
  std::snprintf(buf, sizeof buf, " -> %d (the fewest within %.0f%% of the best)", choice.workers, 100 * choice.noise);
  return s + buf;
}

}  // namespace kestrel
