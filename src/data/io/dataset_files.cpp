// Dataset file access: plain files through pread into a per-thread buffer, pack entries through the
// process-wide PackReader of their pack.
#include "data/io/dataset_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

namespace kestrel {
namespace {

// A grow-only byte buffer, one per thread, so reading a file allocates nothing once warm.
struct ScratchBuffer {
  std::unique_ptr<unsigned char[]> data;
  size_t capacity = 0;
  unsigned char* reserve(size_t n) {
    if (n > capacity) {
      data.reset(new unsigned char[n]);
      capacity = n;
    }
    return data.get();
  }
};

ScratchBuffer& thread_scratch() {
  thread_local ScratchBuffer buffer;
  return buffer;
}

// Reads up to n bytes at offset; returns the count read (short only at end of file), -1 on error.
long long read_at(int fd, unsigned char* dst, size_t n, long long offset) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd, dst + done, n - done, offset + static_cast<long long>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return static_cast<long long>(done);
}

int64_t mtime_ns_of(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

}  // namespace

FileStamp file_stamp(const std::string& path) {
  FileStamp s;
  std::string pack_file, rel;
  if (split_pack_path(path, &pack_file, &rel)) {
    struct stat st;
    if (::stat(pack_file.c_str(), &st) != 0) return s;
    try {
      PackEntry entry;
      if (!PackReader::shared(pack_file)->read(rel, &entry)) return s;
      s.size = static_cast<int64_t>(entry.size());
      s.mtime_ns = mtime_ns_of(st);
    } catch (const PackError&) {
      // an unreadable pack: its files count as missing, and reading them reports why
    }
    return s;
  }
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    s.size = static_cast<int64_t>(st.st_size);
    s.mtime_ns = mtime_ns_of(st);
  }
  return s;
}

FileBytes::~FileBytes() { close(); }

FileBytes::FileBytes(FileBytes&& other) noexcept { *this = std::move(other); }

FileBytes& FileBytes::operator=(FileBytes&& other) noexcept {
  if (this != &other) {
    close();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    file_size_ = std::exchange(other.file_size_, 0);
    fd_ = std::exchange(other.fd_, -1);
    entry_ = std::move(other.entry_);
  }
  return *this;
}

void FileBytes::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  entry_ = PackEntry();
  data_ = nullptr;
  size_ = 0;
  file_size_ = 0;
}

bool FileBytes::read_tail(unsigned char* dst, size_t n) const {
  if (file_size_ < n) return false;
  if (whole()) {
    std::memcpy(dst, data_ + size_ - n, n);
    return true;
  }
  return fd_ >= 0 && read_at(fd_, dst, n, static_cast<long long>(file_size_ - n)) == static_cast<long long>(n);
}

bool read_file_bytes(const std::string& path, FileBytes* out, std::string* error, size_t max_bytes) {
  FileBytes result;
  std::string pack_file, rel;
  if (split_pack_path(path, &pack_file, &rel)) {
    try {
      if (!PackReader::shared(pack_file)->read(rel, &result.entry_)) {
        *error = path + ": no such file in the pack";
        return false;
      }
    } catch (const PackError& e) {
      *error = path + ": " + e.what();
      return false;
    }
    result.data_ = result.entry_.data();
    result.size_ = result.file_size_ = result.entry_.size();
    *out = std::move(result);
    return true;
  }
  result.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (result.fd_ < 0) {
    *error = "cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (::fstat(result.fd_, &st) != 0) {
    *error = "cannot stat " + path + ": " + std::strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = "cannot read " + path + ": not a regular file";
    return false;
  }
  result.file_size_ = static_cast<uint64_t>(st.st_size);
  const size_t want = static_cast<size_t>(std::min<uint64_t>(result.file_size_, max_bytes));
  unsigned char* buf = thread_scratch().reserve(std::max<size_t>(want, 1));
  const long long got = read_at(result.fd_, buf, want, 0);
  if (got != static_cast<long long>(want)) {
    *error = "cannot read " + path + ": " + (got < 0 ? std::strerror(errno) : "the file shrank while being read");
    return false;
  }
  result.data_ = buf;
  result.size_ = want;
  *out = std::move(result);
  return true;
}

bool read_text_file(const std::string& path, std::string* text) {
  FileBytes bytes;
  std::string error;
  if (!read_file_bytes(path, &bytes, &error)) return false;
  text->assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return true;
}

}  // namespace kestrel
