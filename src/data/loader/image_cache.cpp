// RAM and memory-mapped disk caches of resized images (see image_cache.h for the layout and why).
#include "data/loader/image_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "data/io/cache_dir.h"
#include "data/io/content_hash.h"
#include "data/io/dataset_files.h"
#include "data/io/image_decode.h"

namespace fs = std::filesystem;

namespace kestrel {

CacheMode parse_cache_mode(const std::string& flag) {
  if (flag == "none" || flag.empty() || flag == "false") return CacheMode::none;
  if (flag == "ram" || flag == "true") return CacheMode::ram;
  if (flag == "disk") return CacheMode::disk;
  throw std::invalid_argument("--cache must be auto, none, ram or disk (got '" + flag + "')");
}

const char* cache_name(CacheMode m) { return m == CacheMode::ram ? "ram" : m == CacheMode::disk ? "disk" : "none"; }

namespace {

constexpr char kMagic[8] = {'K', 'S', 'T', 'R', 'L', 'I', 'M', 'G'};
constexpr uint32_t kVersion = 2;  // 2: a checksum per image
constexpr size_t kAlign = 64;  // every image starts on a cache line

struct FileHeader {
  char magic[8];
  uint32_t version, img_size, resize_rule, entry_size;
  uint64_t count, key, total_bytes;
};
static_assert(sizeof(FileHeader) == 48, "the header is part of the file format");
static_assert(sizeof(ImageCache::Entry) == 32, "the offset table is part of the file format");

size_t pixel_bytes(cv::Size s) { return static_cast<size_t>(s.width) * static_cast<size_t>(s.height) * 3; }
size_t align_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }
size_t table_offset() { return align_up(sizeof(FileHeader)); }

struct Fnv1a {
  uint64_t h = fnv1a64(nullptr, 0);
  void add(const void* p, size_t n) { h = fnv1a64(p, n, h); }
  template <class T>
  void add_value(T v) { add(&v, sizeof v); }
  void add_string(const std::string& s) { add(s.c_str(), s.size() + 1); }
};

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string gib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB", static_cast<double>(bytes) / 1e9);
  return buf;
}

std::vector<std::string> absolute_paths(const std::vector<ImageRecord>& records) {
  std::vector<std::string> out;
  out.reserve(records.size());
  for (const auto& r : records) out.push_back(fs::absolute(r.image_path).lexically_normal().string());
  return out;
}

// Content key: changes when any image is replaced, resized or touched, or the resize settings change.
uint64_t content_key(const std::vector<std::string>& paths, int img_size, ResizeRule rule) {
  Fnv1a f;
  f.add_value(kVersion), f.add_value(img_size), f.add_value(static_cast<uint8_t>(rule));
  for (const auto& p : paths) {
    const FileStamp st = file_stamp(p);
    if (st.size < 0) throw ImageError("cannot stat " + p);
    f.add_string(p);
    f.add_value(st.size);
    f.add_value(st.mtime_ns / 1000000000), f.add_value(st.mtime_ns % 1000000000);
  }
  return f.h;
}

// Header + offset table for these records; returns the total size of the block.
size_t plan_layout(const std::vector<ImageRecord>& records, int img_size, ResizeRule rule, std::vector<ImageCache::Entry>& entries) {
  entries.resize(records.size());
  size_t offset = align_up(table_offset() + records.size() * sizeof(ImageCache::Entry));
  for (size_t i = 0; i < records.size(); ++i) {
    int w0 = records[i].width, h0 = records[i].height;
    if ((w0 <= 0 || h0 <= 0) && !read_image_size(records[i].image_path, &w0, &h0))
      throw ImageError("cannot read the size of " + records[i].image_path);
    const cv::Size s = resized_size(w0, h0, img_size, rule);
    entries[i] = {offset, s.height, s.width, h0, w0, 0};
    offset = align_up(offset + pixel_bytes(s));
  }
  return offset;
}

// Writes header and table at the start of `block`, then decodes every image into its slot.
void fill_block(uint8_t* block, size_t total, const std::vector<ImageRecord>& records, int img_size, ResizeRule rule,
                uint64_t key, std::vector<ImageCache::Entry>& entries, const ParallelFor& parallel_for) {
  FileHeader h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kVersion, h.img_size = static_cast<uint32_t>(img_size), h.resize_rule = static_cast<uint32_t>(rule);
  h.entry_size = sizeof(ImageCache::Entry), h.count = records.size(), h.key = key, h.total_bytes = total;
  parallel_for(records.size(), [&](size_t i) {
    ImageCache::Entry& e = entries[i];
    int h0 = 0, w0 = 0;
    const cv::Mat img = load_image_resized(records[i].image_path, img_size, rule, &h0, &w0);
    if (img.rows != e.h || img.cols != e.w || img.type() != CV_8UC3)
      throw ImageError(records[i].image_path + ": decoded to " + std::to_string(img.cols) + "x" +
                       std::to_string(img.rows) + ", but its header size predicts " + std::to_string(e.w) + "x" +
                       std::to_string(e.h) + " (was the file changed after indexing?)");
    e.orig_h = h0, e.orig_w = w0;
    const size_t row = static_cast<size_t>(e.w) * 3;
    for (int y = 0; y < img.rows; ++y) std::memcpy(block + e.offset + y * row, img.ptr(y), row);
    e.checksum = content_hash64(block + e.offset, row * img.rows);
  });
  std::memcpy(block, &h, sizeof h);
  std::memcpy(block + table_offset(), entries.data(), entries.size() * sizeof(ImageCache::Entry));
}

// A block whose header and table are consistent with `key` and the record count.
bool block_valid(const uint8_t* block, size_t bytes, size_t count, int img_size, ResizeRule rule, uint64_t key) {
  if (bytes < table_offset()) return false;
  FileHeader h;
  std::memcpy(&h, block, sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.version != kVersion || h.entry_size != sizeof(ImageCache::Entry) ||
      h.img_size != static_cast<uint32_t>(img_size) || h.resize_rule != static_cast<uint32_t>(rule) || h.count != count ||
      h.key != key || h.total_bytes != bytes || bytes < table_offset() + count * sizeof(ImageCache::Entry))
    return false;
  const auto* e = reinterpret_cast<const ImageCache::Entry*>(block + table_offset());
  for (size_t i = 0; i < count; ++i)
    if (e[i].h <= 0 || e[i].w <= 0 || e[i].offset + static_cast<uint64_t>(e[i].h) * e[i].w * 3 > bytes) return false;
  return true;
}

// The first image whose pixels do not match their checksum, or SIZE_MAX when all do.
size_t first_damaged(const uint8_t* block, const ImageCache::Entry* e, size_t count, const ParallelFor& parallel_for) {
  std::atomic<size_t> damaged{SIZE_MAX};
  parallel_for(count, [&](size_t i) {
    if (content_hash64(block + e[i].offset, static_cast<size_t>(e[i].h) * e[i].w * 3) != e[i].checksum) {
      size_t seen = damaged.load();
      while (i < seen && !damaged.compare_exchange_weak(seen, i)) {
      }
    }
  });
  return damaged.load();
}

// Maps `path` read-only; nullptr when it cannot be opened or mapped.
uint8_t* map_file(const std::string& path, size_t* bytes) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st {};
  void* p = MAP_FAILED;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    *bytes = static_cast<size_t>(st.st_size);
    p = mmap(nullptr, *bytes, PROT_READ, MAP_SHARED, fd, 0);
  }
  close(fd);
  return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
}

// Builds the cache file at `path` through a temporary file in the same folder and an atomic rename.
// Returns false (with `why`) on any failure, leaving no temporary file behind.
bool write_cache_file(const std::string& path, const std::vector<ImageRecord>& records, int img_size, ResizeRule rule,
                      uint64_t key, const ParallelFor& parallel_for, std::string* why) {
  std::vector<ImageCache::Entry> entries;
  const size_t total = plan_layout(records, img_size, rule, entries);
  static std::atomic<unsigned> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  const int fd = open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return *why = tmp + ": " + std::strerror(errno), false;
  void* p = MAP_FAILED;
  if (ftruncate(fd, static_cast<off_t>(total)) == 0) p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  bool ok = p != MAP_FAILED;
  if (!ok) *why = tmp + ": " + std::strerror(errno);
  try {
    if (ok) fill_block(static_cast<uint8_t*>(p), total, records, img_size, rule, key, entries, parallel_for);
  } catch (const std::exception& e) {
    ok = false, *why = e.what();
  }
  if (p != MAP_FAILED) munmap(p, total);
  if (ok && fdatasync(fd) != 0) ok = false, *why = tmp + ": " + std::strerror(errno);
  close(fd);
  if (ok && rename(tmp.c_str(), path.c_str()) != 0) ok = false, *why = path + ": " + std::strerror(errno);
  if (!ok) unlink(tmp.c_str());
  return ok;
}

}  // namespace

size_t estimate_cache_bytes(const std::vector<ImageRecord>& records, int img_size) {
  size_t total = 0;
  for (const auto& r : records) total += pixel_bytes(resized_size(r.width, r.height, img_size));
  return total;
}

CacheMode choose_auto_cache(size_t image_bytes, size_t available_bytes, std::string* why) {
  const bool fits = available_bytes > 0 && image_bytes <= available_bytes / 8;
  if (why)
    *why = fits ? "caching images in RAM (" + gib(image_bytes) + ", under 1/8 of the " + gib(available_bytes) +
                      " available): each is decoded once, not ~4 times an epoch; --cache none turns this off"
                : "not caching images (" + gib(image_bytes) + " would be over 1/8 of the " + gib(available_bytes) +
                      " available); --cache ram or --cache disk to cache anyway";
  return fits ? CacheMode::ram : CacheMode::none;
}

size_t mem_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  size_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

std::vector<std::string> disk_cache_candidates(const std::vector<ImageRecord>& records, int img_size, ResizeRule rule) {
  if (records.empty()) return {};
  const std::vector<std::string> paths = absolute_paths(records);
  Fnv1a ident;
  for (const auto& p : paths) ident.add_string(p);
  std::string pack_file, rel;  // images in a pack: the cache goes beside the pack file
  const fs::path folder = split_pack_path(paths.front(), &pack_file, &rel) ? fs::path(pack_file)
                                                                            : fs::path(paths.front()).parent_path();
  const std::string name = folder.filename().string() + "." + hex(ident.h).substr(0, 12) + ".img" +
                           std::to_string(img_size) + "." + resize_rule_name(rule) + ".kcache";
  std::vector<std::string> out;
  if (folder.has_parent_path()) out.push_back((folder.parent_path() / name).string());
  const std::string user = user_cache_dir();
  if (!user.empty()) out.push_back((fs::path(user) / "images" / name).string());
  return out;
}

ImageCache::~ImageCache() {
  if (map_) munmap(map_, map_bytes_);
}

cv::Mat ImageCache::image(size_t i, int* orig_h, int* orig_w) const {
  const Entry& e = entries_[i];
  *orig_h = e.orig_h, *orig_w = e.orig_w;
  return cv::Mat(e.h, e.w, CV_8UC3, map_ + e.offset);
}

std::unique_ptr<ImageCache> ImageCache::build_ram(const std::vector<ImageRecord>& records, int img_size, ResizeRule rule,
                                                  const ParallelFor& parallel_for) {
  std::vector<Entry> entries;
  const size_t total = plan_layout(records, img_size, rule, entries);
  const size_t available = mem_available_bytes();
  const size_t margin = std::max<size_t>(size_t{512} << 20, available / 10);
  if (total + margin > available) {
    std::fprintf(stderr, "kestrel: --cache ram needs %s but only %s is available (keeping %s free); not caching\n",
                 gib(total).c_str(), gib(available).c_str(), gib(margin).c_str());
    return nullptr;
  }
  void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "kestrel: --cache ram: cannot allocate %s; not caching\n", gib(total).c_str());
    return nullptr;
  }
  madvise(p, total, MADV_HUGEPAGE);  // 2 MB pages: 512x fewer faults while filling, fewer TLB misses in reads
  std::unique_ptr<ImageCache> cache(new ImageCache);
  cache->map_ = static_cast<uint8_t*>(p), cache->map_bytes_ = total;
  try {
    fill_block(cache->map_, total, records, img_size, rule, 0, entries, parallel_for);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kestrel: --cache ram failed (%s); not caching\n", e.what());
    return nullptr;
  }
  mprotect(p, total, PROT_READ);
  cache->entries_ = reinterpret_cast<const Entry*>(cache->map_ + table_offset());
  cache->count_ = records.size();
  std::fprintf(stderr, "kestrel: cached %zu images in RAM (%s)\n", records.size(), gib(total).c_str());
  return cache;
}

std::unique_ptr<ImageCache> ImageCache::open_or_build_disk(const std::vector<ImageRecord>& records, int img_size,
                                                           ResizeRule rule, const ParallelFor& parallel_for) {
  const std::vector<std::string> candidates = disk_cache_candidates(records, img_size, rule);
  uint64_t key = 0;
  try {
    key = content_key(absolute_paths(records), img_size, rule);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kestrel: --cache disk: %s; not caching\n", e.what());
    return nullptr;
  }
  auto open_valid = [&](const std::string& path) -> std::unique_ptr<ImageCache> {
    size_t bytes = 0;
    uint8_t* map = map_file(path, &bytes);
    if (!map) return nullptr;
    if (!block_valid(map, bytes, records.size(), img_size, rule, key)) {
      munmap(map, bytes);
      return nullptr;
    }
    const auto* entries = reinterpret_cast<const Entry*>(map + table_offset());
    if (const size_t bad = first_damaged(map, entries, records.size(), parallel_for); bad != SIZE_MAX) {
      std::fprintf(stderr, "kestrel: image cache %s is damaged (the cached pixels of %s do not match their checksum); rebuilding it\n",
                   path.c_str(), records[bad].image_path.c_str());
      munmap(map, bytes);
      return nullptr;
    }
    std::unique_ptr<ImageCache> cache(new ImageCache);
    cache->map_ = map, cache->map_bytes_ = bytes, cache->path_ = path;
    cache->entries_ = reinterpret_cast<const Entry*>(map + table_offset());
    cache->count_ = records.size();
    return cache;
  };
  for (const auto& path : candidates)
    if (auto cache = open_valid(path)) {
      cache->reused_ = true;
      return cache;
    }
  std::string why = "cannot write " + joined_paths(candidates);
  for (const auto& path : candidates) {
    const fs::path dir = fs::path(path).parent_path();
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (!dir_is_writable(dir.string())) continue;
    std::fprintf(stderr, "kestrel: writing image cache %s (%s)\n", path.c_str(),
                 gib(estimate_cache_bytes(records, img_size)).c_str());
    if (!write_cache_file(path, records, img_size, rule, key, parallel_for, &why)) continue;
    if (auto cache = open_valid(path)) return cache;
    why = path + " changed while it was being written";
  }
  std::fprintf(stderr, "kestrel: --cache disk failed (%s); not caching\n", why.c_str());
  return nullptr;
}

}  // namespace kestrel
