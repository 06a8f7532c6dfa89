// parallel_for: an atomic item counter shared by the threads, a condition variable for the reporter.
#include "core/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "core/cpu_cores.h"

namespace kestrel {

void parallel_for(size_t n, const std::function<void(size_t)>& fn, const ParallelOptions& options) {
  const unsigned cores = usable_cores();
  const size_t threads = std::min<size_t>(options.threads ? options.threads : cores, std::max<size_t>(n, 1));
  std::atomic<size_t> next{0}, done{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex mu;
  std::condition_variable finished;
  size_t running = 0;
  auto work = [&] {
    for (size_t i; !failed && (i = next.fetch_add(1)) < n;) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failed.exchange(true)) error = std::current_exception();
      }
      done.fetch_add(1);
    }
    std::lock_guard<std::mutex> lock(mu);
    if (--running == 0) finished.notify_all();
  };
  const bool caller_works = !options.progress;
  running = threads;
  std::vector<std::thread> pool;
  for (size_t t = caller_works ? 1 : 0; t < threads; ++t) pool.emplace_back(work);
  if (caller_works) {
    work();
  } else {
    std::unique_lock<std::mutex> lock(mu);
    while (!finished.wait_for(lock, std::chrono::milliseconds(100), [&] { return running == 0; })) {
      lock.unlock();
      options.progress(done.load(), n);
      lock.lock();
    }
  }
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  if (options.progress) options.progress(n, n);
}

}  // namespace kestrel
