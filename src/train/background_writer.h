// Writes files off the calling thread, one at a time and in order: a checkpoint serialised on the
// training thread (a copy of the state, see serialize_checkpoint) reaches the disk while training
// goes on. Each file is replaced atomically (write_file_atomic).
#pragma once
#include <exception>
#include <string>
#include <thread>

namespace kestrel {

class BackgroundWriter {
 public:
  BackgroundWriter() = default;
  BackgroundWriter(const BackgroundWriter&) = delete;
  BackgroundWriter& operator=(const BackgroundWriter&) = delete;
  ~BackgroundWriter();  // waits for the write in flight (its error is dropped)

  // Waits for the previous write (rethrowing its error), then starts writing `bytes` to `path`.
  void write(std::string path, std::string bytes);
  // Waits for the write in flight; rethrows its error (std::runtime_error naming the file).
  void wait();

 private:
  std::thread thread_;
  std::exception_ptr error_;
};

}  // namespace kestrel
