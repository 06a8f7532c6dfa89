// Checking packs (every file against its checksum, every split entry present) and unpacking them.
#include <filesystem>
#include <fstream>

#include "data/io/content_hash.h"
#include "data/pack/pack_check.h"
#include "data/pack/pack_reader.h"

namespace fs = std::filesystem;

namespace kestrel {
namespace {

// The file's problem against its stored checksum, or "".
std::string checksum_problem(const PackReader& pack, std::string_view rel, const unsigned char* data, size_t size) {
  uint64_t stored = 0;
  if (!pack.checksum(rel, &stored)) return "no checksum stored";
  return stored == content_hash64(data, size) ? "" : "content does not match its checksum (damaged)";
}

// A relative path that stays inside the folder it is joined to.
bool safe_relative(const std::string& rel) {
  const fs::path p(rel);
  if (rel.empty() || p.is_absolute()) return false;
  for (const fs::path& part : p)
    if (part == ".." || part == ".") return false;
  return true;
}

}  // namespace

PackCheck verify_pack(const std::string& pack_file, const std::function<void(size_t, size_t)>& progress) {
  const auto pack = PackReader::open(pack_file);  // a reader of its own: the file as it is now
  PackCheck check;
  const size_t total = pack->file_count();
  pack->for_each_file([&](std::string_view rel, const unsigned char* data, size_t size) {
    const std::string problem = checksum_problem(*pack, rel, data, size);
    if (!problem.empty()) check.problems.push_back(std::string(rel) + ": " + problem);
    ++check.files;
    check.bytes += size;
    if (progress && (check.files % 256 == 0 || check.files == total)) progress(check.files, total);
  });
  for (const std::string& split : pack->split_names())
    for (const std::string& rel : pack->split(split))
      if (!pack->contains(rel)) check.problems.push_back(rel + ": listed in split '" + split + "' but not stored");
  return check;
}

PackCheck unpack_pack(const std::string& pack_file, const std::string& out_dir) {
  const auto pack = PackReader::open(pack_file);
  PackCheck check;
  pack->for_each_file([&](std::string_view rel_view, const unsigned char* data, size_t size) {
    const std::string rel(rel_view);
    if (!safe_relative(rel)) {
      check.problems.push_back(rel + ": not a relative path inside the output folder; skipped");
      return;
    }
    const std::string problem = checksum_problem(*pack, rel, data, size);
    if (!problem.empty()) check.problems.push_back(rel + ": " + problem);
    const fs::path target = fs::path(out_dir) / rel;
    std::error_code ec;
    if (fs::exists(target, ec)) throw std::runtime_error("unpack: " + target.string() + " exists; not overwriting it");
    fs::create_directories(target.parent_path(), ec);
    std::ofstream out(target, std::ios::binary);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out.flush()) throw std::runtime_error("unpack: cannot write " + target.string());
    ++check.files;
    check.bytes += size;
  });
  return check;
}

}  // namespace kestrel
