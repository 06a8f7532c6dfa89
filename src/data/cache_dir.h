// Where Kestrel keeps derived files (label index caches, the demo dataset, image caches), and the small
// file-system helpers that writing them safely needs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace kestrel {

// $XDG_CACHE_HOME/kestrel, else $HOME/.cache/kestrel; "" when neither variable is set.
std::string user_cache_dir();

// True when files may be created in `dir`. The permission bits are honoured even for root, so a
// read-only-by-mode dataset folder (dr-xr-xr-x) is never written into.
bool dir_is_writable(const std::string& dir);

// Writes `bytes` to path.tmp.<pid>, fsyncs it, renames it over `path` and fsyncs the folder, so readers
// see either the old file or the whole new one (checkpoints, caches). Creates missing parent folders.
// On error the temporary is removed and std::runtime_error is thrown.
void write_file_atomic(const std::string& path, const std::string& bytes);

// 64-bit FNV-1a, for cache keys (not for security).
uint64_t fnv1a64(const void* data, size_t size, uint64_t hash = 0xcbf29ce484222325ull);

}  // namespace kestrel
