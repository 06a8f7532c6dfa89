// The one thread pool for batch jobs over items (scanning, indexing, packing, filling a cache,
// generating the demo data): fn(i) for every i in [0, n), items claimed one at a time by short-lived
// threads. The first exception stops further claims and is rethrown on the calling thread once every
// thread has joined, so an error in a helper thread is an error, never std::terminate.
#pragma once
#include <cstddef>
#include <functional>

namespace kestrel {

struct ParallelOptions {
  unsigned threads = 0;  // 0: one per core
  // Called on the calling thread about every 100 ms and once at the end with (items done, n). With a
  // progress callback the calling thread only reports; without, it works on items too.
  std::function<void(size_t done, size_t n)> progress;
};

void parallel_for(size_t n, const std::function<void(size_t)>& fn, const ParallelOptions& options = {});

}  // namespace kestrel
