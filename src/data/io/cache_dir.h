// Where Kestrel keeps derived files (label index caches, the demo dataset, image caches): the user's
// cache folder, whether a dataset folder may be written, and cache keys.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "data/io/dataset_files.h"

namespace kestrel {

// $XDG_CACHE_HOME/kestrel, else $HOME/.cache/kestrel; "" when neither variable is set.
std::string user_cache_dir();

// True when files may be created in `dir`. The permission bits are honoured even for root, so a
// read-only-by-mode dataset folder (dr-xr-xr-x) is never written into.
bool dir_is_writable(const std::string& dir);

// Cache files a run tried, comma-separated ("" entries skipped), for the line that says none could be
// written: "cannot write labels/train.kestrel.cache, ~/.cache/kestrel/index/<hash>.cache".
std::string joined_paths(const std::vector<std::string>& files);

// Writes a dataset cache (atomically) at `beside` when its folder is writable, else at `user`, and
// returns the path written. When neither takes it, prints "kestrel: <what> not saved (cannot write
// <beside>, <user>); <consequence>" and returns "".
std::string save_dataset_cache(const std::string& beside, const std::string& user, const std::string& bytes,
                               const char* what, const char* consequence);

// Where a cache derived from a dataset's labels lives: {beside, user}. beside is "<labels folder><suffix>"
// (e.g. labels/train2017.kestrel.cache, YOLOv5's labels/train2017.cache renamed), to be used when that
// folder's parent is writable; user is user_cache_dir()/<kind>/<hash of beside>.<suffix's last extension>.
// For files inside a pack beside is "" (nothing is ever written into a pack) and only user applies.
std::pair<std::string, std::string> dataset_cache_locations(const std::string& first_label_path,
                                                            const std::string& suffix, const std::string& kind);

// The key of a cache derived from a dataset's labels (the index, the scan): `version` (its bytes, so a
// format change misses), the class settings, and every image path with the stamps of the image and of
// its label file, so any file added, removed or touched changes it.
uint64_t dataset_key(const void* version, size_t version_size, int nc, bool single_cls,
                     const std::vector<std::string>& images, const std::vector<FileStamp>& image_stamps,
                     const std::vector<FileStamp>& label_stamps);

// 64-bit FNV-1a, for cache keys (not for security).
uint64_t fnv1a64(const void* data, size_t size, uint64_t hash = 0xcbf29ce484222325ull);

}  // namespace kestrel
