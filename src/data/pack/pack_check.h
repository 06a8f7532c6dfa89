// Checking a pack (every file against its checksum, every split entry present) and unpacking it
// back into files: `kestrel pack --verify` and `--unpack`.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kestrel {

struct PackCheck {
  size_t files = 0;
  uint64_t bytes = 0;
  std::vector<std::string> problems;  // "<relative path>: what is wrong"
  bool ok() const { return problems.empty(); }
};

// Re-reads every file of a pack and compares it with its checksum; checks that every split entry exists.
PackCheck verify_pack(const std::string& pack_file, const std::function<void(size_t, size_t)>& progress = {});

// Writes every file of the pack under out_dir/<relative path>, byte for byte, after checking its checksum
// (a mismatch is reported, the file still written). Refuses to overwrite an existing file, and paths that
// would leave out_dir.
PackCheck unpack_pack(const std::string& pack_file, const std::string& out_dir);

}  // namespace kestrel
