// ZIP central-directory reader for PyTorch archives. Every offset and size read from the file is
// checked against the buffer before use; sizes are 64-bit so ZIP64 archives need no special path.
#include "model/zip_reader.h"

#include <array>
#include <fstream>
#include <limits>

namespace kestrel {
namespace {

constexpr uint32_t kEocdSig = 0x06054b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint32_t kZip64EocdSig = 0x06064b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kLocalSig = 0x04034b50;
constexpr size_t kEocdSize = 22;
constexpr size_t kCentralSize = 46;
constexpr size_t kLocalSize = 30;
constexpr size_t kZip64LocatorSize = 20;
constexpr size_t kZip64EocdSize = 56;
constexpr uint64_t kMaxEntries = 1u << 20;

uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
uint64_t le64(const uint8_t* p) { return le32(p) | (static_cast<uint64_t>(le32(p + 4)) << 32); }

// True when [offset, offset+len) lies inside a buffer of `size` bytes (overflow-safe).
bool in_bounds(uint64_t offset, uint64_t len, uint64_t size) {
  return offset <= size && len <= size - offset;
}

const std::array<uint32_t, 256>& crc_table() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

}  // namespace

uint32_t crc32_of(const uint8_t* data, size_t size) {
  const auto& table = crc_table();
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) c = table[(c ^ data[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

ZipArchive::ZipArchive(std::shared_ptr<const std::vector<uint8_t>> bytes, std::string label)
    : bytes_(std::move(bytes)), label_(std::move(label)) {
  parse_central_directory();
}

std::shared_ptr<const std::vector<uint8_t>> read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw FormatError(path + ": cannot open file");
  const std::streamoff size = in.tellg();
  if (size < 0) throw FormatError(path + ": cannot determine file size");
  auto bytes = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(size));
  in.seekg(0);
  if (size > 0 && !in.read(reinterpret_cast<char*>(bytes->data()), size)) {
    throw FormatError(path + ": read failed");
  }
  return bytes;
}

void ZipArchive::fail(const std::string& what) const { throw FormatError(label_ + ": " + what); }

void ZipArchive::parse_central_directory() {
  const DirectoryRange cd = find_central_directory();
  entries_.reserve(cd.count);
  uint64_t pos = cd.offset;
  for (uint64_t i = 0; i < cd.count; ++i) pos = parse_entry(pos, cd.offset + cd.size, i);
}

ZipArchive::DirectoryRange ZipArchive::find_central_directory() const {
  const uint8_t* buf = bytes_->data();
  const uint64_t size = bytes_->size();
  if (size < kEocdSize) fail("not a zip archive (file too small: " + std::to_string(size) + " bytes)");

  // The end-of-central-directory record sits in the last 22 + 65535 (comment) bytes.
  uint64_t eocd = std::numeric_limits<uint64_t>::max();
  const uint64_t lowest = size > kEocdSize + 0xFFFF ? size - kEocdSize - 0xFFFF : 0;
  for (uint64_t pos = size - kEocdSize + 1; pos-- > lowest;) {
    if (le32(buf + pos) == kEocdSig && pos + kEocdSize + le16(buf + pos + 20) == size) {
      eocd = pos;
      break;
    }
  }
  if (eocd == std::numeric_limits<uint64_t>::max()) {
    fail("not a zip archive (no end-of-central-directory record; truncated file?)");
  }
  DirectoryRange cd{le16(buf + eocd + 10), le32(buf + eocd + 12), le32(buf + eocd + 16)};

  if (eocd >= kZip64LocatorSize && le32(buf + eocd - kZip64LocatorSize) == kZip64LocatorSig) {
    const uint64_t z64 = le64(buf + eocd - kZip64LocatorSize + 8);
    if (!in_bounds(z64, kZip64EocdSize, size) || le32(buf + z64) != kZip64EocdSig) {
      fail("corrupt ZIP64 end-of-central-directory record");
    }
    cd = {le64(buf + z64 + 32), le64(buf + z64 + 40), le64(buf + z64 + 48)};
  }
  if (!in_bounds(cd.offset, cd.size, size)) fail("central directory lies outside the file (truncated?)");
  if (cd.count > kMaxEntries || cd.count > cd.size / kCentralSize) {
    fail("implausible entry count " + std::to_string(cd.count));
  }
  return cd;
}

uint64_t ZipArchive::parse_entry(uint64_t pos, uint64_t directory_end, uint64_t i) {
  const uint8_t* buf = bytes_->data();
  const uint64_t size = bytes_->size();
  if (!in_bounds(pos, kCentralSize, directory_end) || le32(buf + pos) != kCentralSig) {
    fail("corrupt central directory at entry " + std::to_string(i));
  }
  const uint8_t* h = buf + pos;
  const uint16_t flags = le16(h + 8);
  ZipEntry e;
  e.method = le16(h + 10);
  e.crc32 = le32(h + 16);
  uint64_t csize = le32(h + 20);
  uint64_t usize = le32(h + 24);
  const uint16_t name_len = le16(h + 28);
  const uint16_t extra_len = le16(h + 30);
  const uint16_t comment_len = le16(h + 32);
  uint64_t local = le32(h + 42);
  if (!in_bounds(pos + kCentralSize, uint64_t{name_len} + extra_len + comment_len, directory_end)) {
    fail("central directory entry " + std::to_string(i) + " overruns the directory");
  }
  e.name.assign(reinterpret_cast<const char*>(h + kCentralSize), name_len);
  if (flags & 1) fail("entry '" + e.name + "' is encrypted");
  read_zip64_extra(h + kCentralSize + name_len, extra_len, e.name, usize, csize, local);
  if (e.method == 0 && csize != usize) {
    fail("stored entry '" + e.name + "' has different compressed and uncompressed sizes");
  }
  e.size = csize;
  if (!in_bounds(local, kLocalSize, size) || le32(buf + local) != kLocalSig) {
    fail("entry '" + e.name + "' has no local header at its recorded offset");
  }
  e.data_offset = local + kLocalSize + le16(buf + local + 26) + le16(buf + local + 28);
  if (!in_bounds(e.data_offset, csize, size)) {
    fail("entry '" + e.name + "' data lies outside the file (truncated?)");
  }
  if (!index_.emplace(e.name, entries_.size()).second) fail("duplicate entry '" + e.name + "'");
  entries_.push_back(std::move(e));
  return pos + kCentralSize + name_len + extra_len + comment_len;
}

void ZipArchive::read_zip64_extra(const uint8_t* extra, uint16_t extra_len, const std::string& name, uint64_t& usize,
                                  uint64_t& csize, uint64_t& local) const {
  for (uint32_t x = 0; x + 4 <= extra_len;) {
    const uint16_t id = le16(extra + x);
    const uint16_t len = le16(extra + x + 2);
    if (x + 4 + len > extra_len) fail("entry '" + name + "' has a malformed extra field");
    if (id == 0x0001) {
      const uint8_t* f = extra + x + 4;
      uint32_t used = 0;
      for (uint64_t* field : {&usize, &csize, &local}) {
        if (*field != 0xFFFFFFFFu) continue;
        if (used + 8 > len) fail("entry '" + name + "' has a short ZIP64 extra field");
        *field = le64(f + used);
        used += 8;
      }
    }
    x += 4u + len;
  }
}

const ZipEntry* ZipArchive::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

ByteView ZipArchive::read(const std::string& name) const {
  const ZipEntry* e = find(name);
  if (!e) fail("missing entry '" + name + "'");
  if (e->method != 0) {
    fail("entry '" + name + "' is compressed (method " + std::to_string(e->method) +
         "); only stored entries are supported, as torch.save writes them");
  }
  return {bytes_->data() + e->data_offset, static_cast<size_t>(e->size)};
}

void ZipArchive::verify_crc(const ZipEntry& entry) const {
  if (crc32_of(bytes_->data() + entry.data_offset, entry.size) != entry.crc32) {
    fail("CRC mismatch in entry '" + entry.name + "' (corrupt file)");
  }
}

}  // namespace kestrel
