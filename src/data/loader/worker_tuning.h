// --workers auto: measure the loader's throughput at increasing thread counts and pick the knee,
// the smallest count past which more threads stop helping beyond measurement noise.
#pragma once
#include <string>
#include <vector>

#include "data/loader/loader.h"

namespace kestrel {

struct WorkerProbe {
  int workers = 0;
  double images_per_second = 0;  // the median of its passes
  double spread = 0;             // the range of its passes, relative to that median
};

struct WorkerChoice {
  int workers = 1;
  std::vector<WorkerProbe> curve;  // 1, 2, 3, ...
  double noise = 0;                // the margin the knee allowed: the floor, or half the widest range
};

// The knee of a throughput curve: the smallest worker count whose throughput is within `noise`
// (a fraction) of the best measured.
int knee_of(const std::vector<WorkerProbe>& curve, double noise);

// Times the first batches of an epoch with 1, 2, ... max_workers threads on `loader` (the same
// images each time, after one warm-up pass so that every count sees a warm page cache) and leaves
// the loader at the knee. Counting stops early once two more threads have brought nothing beyond
// noise. Each count is timed twice, in a pass up and a pass down, so that its range tells the noise
// the knee must allow (never under `noise`). The loader's epoch in flight is cancelled.
WorkerChoice choose_workers(Loader& loader, int max_workers, double noise = 0.05);

// "workers 1: 120 img/s ±2% | 2: 210 img/s ±1% | 3: 212 img/s ±3% -> 2 (the fewest within 5% of the best)"
std::string format_worker_curve(const WorkerChoice& choice);

}  // namespace kestrel
