// Reading packs (see pack_format.h): a read-only LMDB environment per pack file, shared by every thread
// of the process, and the helpers that recognise pack paths ("<pack>::<relative path>") and pack
// sources ("<pack>#<split>").
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

struct MDB_env;
struct MDB_txn;

namespace kestrel {

struct PackError : std::runtime_error {
  using std::runtime_error::runtime_error;
};  // message names the pack file

class PackReader;

// One file's bytes inside a pack, zero-copy from the memory map. Holds a read transaction, so the bytes
// stay valid (and the pack open) for as long as this object lives.
class PackEntry {
 public:
  PackEntry() = default;
  ~PackEntry();
  PackEntry(PackEntry&& other) noexcept;
  PackEntry& operator=(PackEntry&& other) noexcept;
  PackEntry(const PackEntry&) = delete;
  PackEntry& operator=(const PackEntry&) = delete;

  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  friend class PackReader;
  void release();
  std::shared_ptr<const PackReader> pack_;
  MDB_txn* txn_ = nullptr;
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

class PackReader : public std::enable_shared_from_this<PackReader> {
 public:
  // Opens a pack read-only (MDB_RDONLY | MDB_NOTLS | MDB_NOLOCK: a pack is never written after it is
  // renamed into place, so no lock file is needed and read-only folders work). Throws PackError.
  static std::shared_ptr<const PackReader> open(const std::string& pack_file);
  // The process-wide reader of a pack file: opened on first use, reopened when the file was replaced.
  static std::shared_ptr<const PackReader> shared(const std::string& pack_file);
  ~PackReader();
  PackReader(const PackReader&) = delete;
  PackReader& operator=(const PackReader&) = delete;

  const std::string& path() const { return path_; }
  // The bytes of the file at `rel`; false when the pack has no such file. Thread safe.
  bool read(std::string_view rel, PackEntry* out) const;
  bool contains(std::string_view rel) const;
  // The stored checksum of `rel`; false when there is none.
  bool checksum(std::string_view rel, uint64_t* out) const;
  // A "meta" value; "" when absent.
  std::string meta(std::string_view key) const;
  std::vector<std::string> split_names() const;
  // The image paths (relative) of a split, sorted. Throws PackError naming the splits when absent.
  std::vector<std::string> split(const std::string& name) const;
  // Calls fn for every file in key order, inside one read transaction.
  void for_each_file(const std::function<void(std::string_view rel, const unsigned char* data, size_t size)>& fn) const;
  size_t file_count() const;

 private:
  explicit PackReader(const std::string& pack_file);
  MDB_txn* begin() const;
  std::string path_;
  MDB_env* env_ = nullptr;
  unsigned files_ = 0, checksums_ = 0, meta_ = 0;  // MDB_dbi handles
};

// "<pack file>::<relative path>" (the pack file ends in .kpack).
bool is_pack_path(std::string_view path);
bool split_pack_path(std::string_view path, std::string* pack_file, std::string* rel);
std::string make_pack_path(const std::string& pack_file, const std::string& rel);

// A data.yaml source naming a pack split: "<pack file>#<split>". A bare "<pack file>" is recognised too,
// so that the error can ask for the split.
bool is_pack_source(std::string_view source);
// The pack paths of the images of a pack source, sorted. Throws PackError (no split given, unknown split,
// unreadable pack).
std::vector<std::string> pack_source_images(const std::string& source);

}  // namespace kestrel
