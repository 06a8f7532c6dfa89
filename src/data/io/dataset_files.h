// The one way the data layer reads a dataset file's bytes, whether the file lies in a folder or inside a
// pack ("<pack>::<relative path>", see pack_format.h). Decoding, header reads, label reads and cache keys
// all go through here, so everything built on them reads packs transparently.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "data/pack/pack_reader.h"

namespace kestrel {

// Identity of a file's content for cache keys. A pack entry gets its size and the pack file's mtime
// (packs are replaced whole, never edited).
struct FileStamp {
  int64_t size = -1;  // -1: missing (or not a regular file)
  int64_t mtime_ns = 0;
};
FileStamp file_stamp(const std::string& path);

// A read-only view of a file's bytes (or of its first bytes). A plain file is read into a buffer owned
// by the calling thread, valid until that thread's next read_file_bytes of a plain file; a pack entry
// is a view into the pack's memory map, valid while this object lives.
class FileBytes {
 public:
  FileBytes() = default;
  ~FileBytes();
  FileBytes(FileBytes&& other) noexcept;
  FileBytes& operator=(FileBytes&& other) noexcept;
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;

  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }
  // The whole file's size; more than size() when only a prefix was read.
  uint64_t file_size() const { return file_size_; }
  bool whole() const { return size_ == file_size_; }
  // Copies the file's last n bytes to dst; false when the file is shorter than n or a read fails.
  bool read_tail(unsigned char* dst, size_t n) const;

 private:
  friend bool read_file_bytes(const std::string&, FileBytes*, std::string*, size_t);
  void close();
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
  uint64_t file_size_ = 0;
  int fd_ = -1;       // plain files: kept open for read_tail
  PackEntry entry_;   // pack entries
};

// Reads the file at `path`, or its first max_bytes (a pack entry always comes whole: it costs nothing).
// On failure returns false with *error saying why (missing, permission, I/O error) and naming the file.
bool read_file_bytes(const std::string& path, FileBytes* out, std::string* error, size_t max_bytes = SIZE_MAX);
// The whole file as text; false when it cannot be read.
bool read_text_file(const std::string& path, std::string* text);

}  // namespace kestrel
