// BackgroundWriter: one thread per write, joined before the next.
#include "train/background_writer.h"

#include <utility>

#include "core/atomic_file.h"

namespace kestrel {

BackgroundWriter::~BackgroundWriter() {
  if (thread_.joinable()) thread_.join();
}

void BackgroundWriter::write(std::string path, std::string bytes) {
  wait();
  thread_ = std::thread([this, path = std::move(path), bytes = std::move(bytes)] {
    try {
      write_file_atomic(path, bytes);
    } catch (...) {
      error_ = std::current_exception();
    }
  });
}

void BackgroundWriter::wait() {
  if (thread_.joinable()) thread_.join();
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

}  // namespace kestrel
