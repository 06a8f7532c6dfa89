// Caches of decoded, already-resized images (what load_image_resized returns), so each image is
// decoded once per run (RAM) or once per machine (disk). Both keep every image in one contiguous
// block, laid out by an offset table computed from the header sizes in ImageRecord:
//  - RAM: an anonymous mapping, filled once, then made read-only.
//  - disk: one memory-mapped file per (dataset, img_size, resize mode): header, offset table, raw BGR
//    pixels. Written to a temporary file and renamed into place, so processes that start together
//    never see a half-written cache and later runs reuse it; a key over the image paths, sizes and
//    mtimes invalidates it when the data changes. Reads are zero-copy cv::Mat headers over the mapping.
//    Each image's pixels carry a checksum, verified whenever an existing file is mapped: a truncated,
//    garbled or half-copied cache is rebuilt, never trusted (hashing runs at several GB/s).
// Both mappings are read-only once filled: code that wrote into a cached image would fault at once
// instead of silently corrupting later epochs.
#pragma once
#include <opencv2/core.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/io/image_decode.h"
#include "data/types.h"

namespace kestrel {

enum class CacheMode { none, ram, disk };
// --cache as YOLOv5 takes it: "none" (or "" / "false"), "ram" (or "true"), "disk"; "auto" is the
// trainer's to decide (choose_auto_cache). Throws std::invalid_argument naming the flag.
CacheMode parse_cache_mode(const std::string& flag);
const char* cache_name(CacheMode m);  // the flag value: none, ram, disk

// Runs fn(i) for every i in [0, n), possibly on several threads; returns when all are done.
using ParallelFor = std::function<void(size_t n, const std::function<void(size_t)>& fn)>;

// Bytes a cache of these records needs (pixels only), from the header sizes in the records.
size_t estimate_cache_bytes(const std::vector<ImageRecord>& records, int img_size);
// MemAvailable from /proc/meminfo in bytes (0 when unreadable).
size_t mem_available_bytes();
// The default cache policy (train's --cache auto): RAM when the resized images take at most 1/8 of the
// available memory, else none. A mosaic decodes ~4 images per sample, so an uncached run decodes every
// image ~4 times an epoch; a small dataset is better decoded once. `why` gets the line to print.
CacheMode choose_auto_cache(size_t image_bytes, size_t available_bytes, std::string* why);

// Where the disk cache of these records lives (the first writable candidate is chosen when building):
// beside the data (the parent of the first image's folder) and under user_cache_dir()/images
// ($XDG_CACHE_HOME/kestrel or ~/.cache/kestrel). The file name carries a hash of the image paths, the size and the resize rule.
std::vector<std::string> disk_cache_candidates(const std::vector<ImageRecord>& records, int img_size, ResizeRule rule);

class ImageCache {
 public:
  ~ImageCache();
  ImageCache(const ImageCache&) = delete;
  ImageCache& operator=(const ImageCache&) = delete;

  // Decodes every record into memory. Returns nullptr (after printing why to stderr) when the estimate
  // does not fit in MemAvailable minus a safety margin.
  static std::unique_ptr<ImageCache> build_ram(const std::vector<ImageRecord>& records, int img_size, ResizeRule rule,
                                               const ParallelFor& parallel_for);
  // Maps a valid existing cache file, or builds one. Returns nullptr (after printing why) when no
  // candidate folder can hold it.
  static std::unique_ptr<ImageCache> open_or_build_disk(const std::vector<ImageRecord>& records, int img_size,
                                                        ResizeRule rule, const ParallelFor& parallel_for);

  size_t size() const { return count_; }
  // Image i as a read-only view into the cache (no copy); orig_h/orig_w get the original size.
  cv::Mat image(size_t i, int* orig_h, int* orig_w) const;
  size_t bytes() const { return map_bytes_; }
  const std::string& path() const { return path_; }  // disk file, empty for RAM
  bool reused() const { return reused_; }            // disk: an existing file was mapped, nothing decoded

  // One image's place in the block (the offset table is part of the mapping).
  struct Entry {
    uint64_t offset;
    int32_t h, w, orig_h, orig_w;
    uint64_t checksum;  // content_hash64 of the image's h*w*3 pixel bytes
  };

 private:
  ImageCache() = default;
  const Entry* entries_ = nullptr;
  size_t count_ = 0;
  uint8_t* map_ = nullptr;
  size_t map_bytes_ = 0;
  std::string path_;
  bool reused_ = false;
};

}  // namespace kestrel
