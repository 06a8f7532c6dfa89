// A minimal, bounds-checked reader for the ZIP archives PyTorch writes (.pt checkpoints): central
// directory, ZIP64 extensions, stored (uncompressed) entries only. No LibTorch, so it can be fuzzed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace kestrel {

// A view of bytes owned by someone else (the archive's buffer).
struct ByteView {
  const uint8_t* data = nullptr;
  size_t size = 0;
};

struct ZipEntry {
  std::string name;
  uint16_t method = 0;       // 0 = stored; anything else is rejected when the entry is read
  uint32_t crc32 = 0;
  uint64_t size = 0;         // uncompressed size (== compressed size for stored entries)
  uint64_t data_offset = 0;  // where the entry's bytes begin in the archive buffer
};

// Thrown for every malformed or unsupported input; the message starts with the archive's name.
struct FormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ZipArchive {
 public:
  // Parses the central directory of `bytes`; `label` (usually the file path) prefixes errors.
  ZipArchive(std::shared_ptr<const std::vector<uint8_t>> bytes, std::string label);

  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(const std::string& name) const;
  // The bytes of a stored entry; throws FormatError for a missing or compressed entry.
  ByteView read(const std::string& name) const;
  // Recomputes the entry's CRC-32 and throws FormatError on mismatch.
  void verify_crc(const ZipEntry& entry) const;
  const std::string& label() const { return label_; }
  [[noreturn]] void fail(const std::string& what) const;

 private:
  struct DirectoryRange {
    uint64_t count, size, offset;
  };
  void parse_central_directory();
  DirectoryRange find_central_directory() const;
  // Reads the directory entry at `pos` (number `i`) into entries_; returns the next entry's position.
  uint64_t parse_entry(uint64_t pos, uint64_t directory_end, uint64_t i);
  // The ZIP64 extra field's 64-bit values, for the sizes and offset saturated at 0xFFFFFFFF.
  void read_zip64_extra(const uint8_t* extra, uint16_t extra_len, const std::string& name, uint64_t& usize,
                        uint64_t& csize, uint64_t& local) const;

  std::shared_ptr<const std::vector<uint8_t>> bytes_;
  std::string label_;
  std::vector<ZipEntry> entries_;
  std::unordered_map<std::string, size_t> index_;
};

uint32_t crc32_of(const uint8_t* data, size_t size);

// A whole file in memory; throws FormatError ("<path>: cannot open file", ...).
std::shared_ptr<const std::vector<uint8_t>> read_file_bytes(const std::string& path);

}  // namespace kestrel
