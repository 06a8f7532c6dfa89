// User cache folder lookup, permission-bit writability and atomic file writes.
#include "data/cache_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <filesystem>
#include <fstream>

#include "data/pack_reader.h"

namespace fs = std::filesystem;

namespace kestrel {

std::string user_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return (fs::path(xdg) / "kestrel").string();
  if (const char* home = std::getenv("HOME"); home && *home)
    return (fs::path(home) / ".cache" / "kestrel").string();
  return "";
}

bool dir_is_writable(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  if (::access(dir.c_str(), W_OK) != 0) return false;  // read-only mounts, ownership
  // access() always says yes to root; the mode bits say whether the folder is meant to be written.
  return ::geteuid() != 0 || (st.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) != 0;
}

namespace {

[[noreturn]] void fail_errno(const std::string& what, const std::string& path) {
  throw std::runtime_error(what + " " + path + ": " + std::strerror(errno));
}

void fsync_folder(const fs::path& file) {
  const std::string folder = file.parent_path().empty() ? "." : file.parent_path().string();
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;  // durability of the rename is best effort; the file itself is complete
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void write_file_atomic(const std::string& path, const std::string& bytes) {
  std::error_code ec;
  const fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  // One temporary per process: several processes may build the same cache file at once.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail_errno("cannot create", tmp);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      errno = err;
      fail_errno("cannot write", tmp);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    errno = err;
    fail_errno("cannot flush", tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    errno = err;
    fail_errno("cannot rename onto", path);
  }
  fsync_folder(path);
}

std::pair<std::string, std::string> dataset_cache_locations(const std::string& first_label_path,
                                                            const std::string& suffix, const std::string& kind) {
  const std::string beside = fs::path(first_label_path).parent_path().string() + suffix;
  const std::string user_dir = user_cache_dir();
  std::string user;
  if (!user_dir.empty()) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(beside.data(), beside.size())));
    user = user_dir + "/" + kind + "/" + hex + suffix.substr(suffix.rfind('.'));
  }
  return {is_pack_path(first_label_path) ? "" : beside, user};
}

uint64_t fnv1a64(const void* data, size_t size, uint64_t hash) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) hash = (hash ^ p[i]) * 0x100000001b3ull;
  return hash;
}

}  // namespace kestrel
