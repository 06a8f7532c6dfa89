// Test helper: a snapshot of every file under a folder (relative path -> size, mtime, content hash), to
// prove that a command changed nothing in a dataset, or that two trees hold the same bytes.
#pragma once
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "data/io/content_hash.h"

namespace kestrel::test {

struct FileSnapshot {
  uint64_t size = 0, hash = 0;
  int64_t mtime_ns = 0;
  unsigned mode = 0;
  bool operator==(const FileSnapshot& o) const {
    return size == o.size && hash == o.hash && mtime_ns == o.mtime_ns && mode == o.mode;
  }
};

// Files only (folders are implied by them); symlinks are not followed.
inline std::map<std::string, FileSnapshot> snapshot_tree(const std::string& root) {
  namespace fs = std::filesystem;
  std::map<std::string, FileSnapshot> out;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    struct stat st {};
    ::stat(entry.path().c_str(), &st);
    out[fs::relative(entry.path(), root).string()] = {
        bytes.size(), content_hash64(bytes.data(), bytes.size()),
        static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec, static_cast<unsigned>(st.st_mode)};
  }
  return out;
}

// The same files with the same bytes (mtimes and modes not compared).
inline bool same_contents(const std::map<std::string, FileSnapshot>& a, const std::map<std::string, FileSnapshot>& b) {
  if (a.size() != b.size()) return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib)
    if (ia->first != ib->first || ia->second.size != ib->second.size || ia->second.hash != ib->second.hash) return false;
  return true;
}

}  // namespace kestrel::test
