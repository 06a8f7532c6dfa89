// User cache folder lookup, permission-bit writability and atomic file writes.
#include "data/io/cache_dir.h"

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

#include "core/atomic_file.h"
#include "data/pack/pack_reader.h"

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

std::string joined_paths(const std::vector<std::string>& files) {
  std::string out;
  for (const std::string& f : files)
    if (!f.empty()) out += (out.empty() ? "" : ", ") + f;
  return out;
}

std::string save_dataset_cache(const std::string& beside, const std::string& user, const std::string& bytes,
                               const char* what, const char* consequence) {
  const bool beside_ok = !beside.empty() && dir_is_writable(fs::path(beside).parent_path().string());
  for (const std::string& target : {beside_ok ? beside : std::string(), user}) {
    if (target.empty()) continue;
    try {
      write_file_atomic(target, bytes);
      return target;
    } catch (const std::runtime_error&) {
      // not writable there (a read-only mount, a full disk): try the next place
    }
  }
  std::fprintf(stderr, "kestrel: %s not saved (cannot write %s); %s\n", what, joined_paths({beside, user}).c_str(), consequence);
  return "";
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

uint64_t dataset_key(const void* version, size_t version_size, int nc, bool single_cls,
                     const std::vector<std::string>& images, const std::vector<FileStamp>& image_stamps,
                     const std::vector<FileStamp>& label_stamps) {
  uint64_t key = fnv1a64(version, version_size);
  const int32_t settings[2] = {nc, single_cls ? 1 : 0};
  key = fnv1a64(settings, sizeof settings, key);
  for (size_t i = 0; i < images.size(); ++i) {
    key = fnv1a64(images[i].c_str(), images[i].size() + 1, key);
    key = fnv1a64(&image_stamps[i], sizeof(FileStamp), key);
    key = fnv1a64(&label_stamps[i], sizeof(FileStamp), key);
  }
  return key;
}

uint64_t fnv1a64(const void* data, size_t size, uint64_t hash) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) hash = (hash ^ p[i]) * 0x100000001b3ull;
  return hash;
}

}  // namespace kestrel
