// Read-only access to packs through LMDB, and the pack path/source conventions.
#include "data/pack/pack_reader.h"

#include <lmdb.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "data/pack/pack_format.h"

namespace kestrel {
namespace {

namespace pf = pack_format;

MDB_val to_val(std::string_view s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }
std::string_view view_of(const MDB_val& v) { return {static_cast<const char*>(v.mv_data), v.mv_size}; }

[[noreturn]] void fail(const std::string& path, const std::string& what, int rc) {
  throw PackError(path + ": " + what + ": " + mdb_strerror(rc));
}

// Ends a read transaction when it goes out of scope.
struct ScopedTxn {
  MDB_txn* txn;
  ~ScopedTxn() { mdb_txn_abort(txn); }
};

// A cursor of a read transaction, closed when it goes out of scope (before its transaction ends).
struct ScopedCursor {
  MDB_cursor* cursor = nullptr;
  ~ScopedCursor() {
    if (cursor) mdb_cursor_close(cursor);
  }
};

}  // namespace

// ---- PackEntry

PackEntry::~PackEntry() { release(); }

PackEntry::PackEntry(PackEntry&& other) noexcept { *this = std::move(other); }

PackEntry& PackEntry::operator=(PackEntry&& other) noexcept {
  if (this != &other) {
    release();
    pack_ = std::move(other.pack_);
    txn_ = std::exchange(other.txn_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void PackEntry::release() {
  if (txn_) mdb_txn_abort(txn_);
  txn_ = nullptr;
  data_ = nullptr;
  size_ = 0;
  pack_.reset();
}

// ---- PackReader

PackReader::PackReader(const std::string& pack_file) : path_(pack_file) {
  int rc = mdb_env_create(&env_);
  if (rc) fail(path_, "cannot create an LMDB environment", rc);
  mdb_env_set_maxdbs(env_, 4);
  rc = mdb_env_open(env_, path_.c_str(), MDB_RDONLY | MDB_NOSUBDIR | MDB_NOTLS | MDB_NOLOCK, 0444);
  if (rc) {
    mdb_env_close(env_);
    env_ = nullptr;
    fail(path_, "cannot open pack", rc);
  }
  MDB_txn* txn = nullptr;
  rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn);
  if (rc) {
    mdb_env_close(env_);
    env_ = nullptr;
    fail(path_, "cannot read pack", rc);
  }
  const std::pair<const char*, unsigned*> dbs[] = {
      {pf::kFilesDb, &files_}, {pf::kChecksumsDb, &checksums_}, {pf::kMetaDb, &meta_}};
  for (const auto& [name, dbi] : dbs) {
    rc = mdb_dbi_open(txn, name, 0, dbi);
    if (rc) {
      mdb_txn_abort(txn);
      mdb_env_close(env_);
      env_ = nullptr;
      fail(path_, std::string("not a Kestrel pack (no '") + name + "' database)", rc);
    }
  }
  mdb_txn_commit(txn);  // a read transaction's commit publishes the dbi handles to every later transaction
  if (meta(pf::kFormatKey) != pf::kFormat) {
    mdb_env_close(env_);
    env_ = nullptr;
    throw PackError(path_ + ": not a " + pf::kFormat + " pack");
  }
}

PackReader::~PackReader() {
  if (env_) mdb_env_close(env_);
}

std::shared_ptr<const PackReader> PackReader::open(const std::string& pack_file) {
  return std::shared_ptr<const PackReader>(new PackReader(pack_file));
}

std::shared_ptr<const PackReader> PackReader::shared(const std::string& pack_file) {
  struct Opened {
    std::shared_ptr<const PackReader> reader;
    dev_t dev;
    ino_t ino;
    int64_t mtime_ns;
  };
  static std::mutex mu;
  static std::unordered_map<std::string, Opened> opened;
  struct stat st {};
  if (::stat(pack_file.c_str(), &st) != 0) throw PackError(pack_file + ": cannot open pack: " + std::strerror(errno));
  const int64_t mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  std::lock_guard<std::mutex> lock(mu);
  Opened& o = opened[pack_file];
  // A pack is replaced by renaming a new file over it: a new inode means a new environment.
  if (!o.reader || o.dev != st.st_dev || o.ino != st.st_ino || o.mtime_ns != mtime_ns)
    o = {open(pack_file), st.st_dev, st.st_ino, mtime_ns};
  return o.reader;
}

MDB_txn* PackReader::begin() const {
  MDB_txn* txn = nullptr;
  const int rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn);
  if (rc) fail(path_, "cannot begin a read transaction", rc);
  return txn;
}

bool PackReader::read(std::string_view rel, PackEntry* out) const {
  MDB_txn* txn = begin();
  MDB_val key = to_val(rel), val{};
  const int rc = mdb_get(txn, files_, &key, &val);
  if (rc) {
    mdb_txn_abort(txn);
    if (rc == MDB_NOTFOUND) return false;
    fail(path_, "cannot read " + std::string(rel), rc);
  }
  PackEntry entry;
  entry.pack_ = shared_from_this();
  entry.txn_ = txn;
  entry.data_ = static_cast<const unsigned char*>(val.mv_data);
  entry.size_ = val.mv_size;
  *out = std::move(entry);
  return true;
}

bool PackReader::contains(std::string_view rel) const {
  ScopedTxn t{begin()};
  MDB_val key = to_val(rel), val{};
  return mdb_get(t.txn, files_, &key, &val) == 0;
}

bool PackReader::checksum(std::string_view rel, uint64_t* out) const {
  ScopedTxn t{begin()};
  MDB_val key = to_val(rel), val{};
  if (mdb_get(t.txn, checksums_, &key, &val) != 0 || val.mv_size != sizeof(uint64_t)) return false;
  std::memcpy(out, val.mv_data, sizeof(uint64_t));
  return true;
}

std::string PackReader::meta(std::string_view key_text) const {
  ScopedTxn t{begin()};
  MDB_val key = to_val(key_text), val{};
  if (mdb_get(t.txn, meta_, &key, &val) != 0) return "";
  return std::string(view_of(val));
}

std::vector<std::string> PackReader::split_names() const {
  std::vector<std::string> names;
  ScopedTxn t{begin()};
  ScopedCursor c;
  if (mdb_cursor_open(t.txn, meta_, &c.cursor) != 0) return names;
  const std::string_view prefix = pf::kSplitKeyPrefix;
  MDB_val key = to_val(prefix), val{};
  for (int rc = mdb_cursor_get(c.cursor, &key, &val, MDB_SET_RANGE); rc == 0;
       rc = mdb_cursor_get(c.cursor, &key, &val, MDB_NEXT)) {
    const std::string_view k = view_of(key);
    if (k.substr(0, prefix.size()) != prefix) break;
    names.emplace_back(k.substr(prefix.size()));
  }
  return names;
}

std::vector<std::string> PackReader::split(const std::string& name) const {
  const std::string text = meta(pf::kSplitKeyPrefix + name);
  if (text.empty()) {
    std::string known;
    for (const std::string& n : split_names()) known += (known.empty() ? "" : ", ") + n;
    throw PackError(path_ + ": no split '" + name + "' (splits: " + (known.empty() ? "none" : known) + ")");
  }
  std::vector<std::string> rels;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    if (end > pos) rels.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return rels;
}

void PackReader::for_each_file(
    const std::function<void(std::string_view rel, const unsigned char* data, size_t size)>& fn) const {
  ScopedTxn t{begin()};
  ScopedCursor c;
  int rc = mdb_cursor_open(t.txn, files_, &c.cursor);
  if (rc) fail(path_, "cannot list files", rc);
  MDB_val key{}, val{};
  for (rc = mdb_cursor_get(c.cursor, &key, &val, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c.cursor, &key, &val, MDB_NEXT))
    fn(view_of(key), static_cast<const unsigned char*>(val.mv_data), val.mv_size);
  if (rc != MDB_NOTFOUND) fail(path_, "cannot list files", rc);
}

size_t PackReader::file_count() const {
  ScopedTxn t{begin()};
  MDB_stat st{};
  if (mdb_stat(t.txn, files_, &st) != 0) return 0;
  return st.ms_entries;
}

// ---- paths and sources

namespace {

// Position of the "::" that ends a pack file name in `path`, or npos.
size_t pack_separator(std::string_view path) {
  const std::string marker = std::string(pf::kExtension) + pf::kPathSeparator;
  const size_t at = path.find(marker);
  return at == std::string_view::npos ? at : at + std::strlen(pf::kExtension);
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

bool is_pack_path(std::string_view path) { return pack_separator(path) != std::string_view::npos; }

bool split_pack_path(std::string_view path, std::string* pack_file, std::string* rel) {
  const size_t at = pack_separator(path);
  if (at == std::string_view::npos) return false;
  *pack_file = std::string(path.substr(0, at));
  *rel = std::string(path.substr(at + std::strlen(pf::kPathSeparator)));
  return true;
}

std::string make_pack_path(const std::string& pack_file, const std::string& rel) {
  return pack_file + pf::kPathSeparator + rel;
}

bool is_pack_source(std::string_view source) {
  const size_t hash = source.rfind(pf::kSplitSeparator);
  return ends_with(hash == std::string_view::npos ? source : source.substr(0, hash), pf::kExtension);
}

std::vector<std::string> pack_source_images(const std::string& source) {
  const size_t hash = source.rfind(pf::kSplitSeparator);
  const std::string file = hash == std::string::npos ? source : source.substr(0, hash);
  const auto pack = PackReader::shared(file);
  if (hash == std::string::npos) {
    std::string known;
    for (const std::string& n : pack->split_names()) known += (known.empty() ? "" : ", ") + n;
    throw PackError(source + ": name the split to read, as " + file + "#<split> (splits: " + known + ")");
  }
  std::vector<std::string> paths;
  for (const std::string& rel : pack->split(source.substr(hash + 1))) paths.push_back(make_pack_path(file, rel));
  return paths;
}

}  // namespace kestrel
