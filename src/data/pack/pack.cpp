// Writing packs: files gathered from a data.yaml, read (and optionally re-encoded) on a pool of threads,
// appended in key order to one LMDB environment, renamed into place when complete.
#include "data/pack/pack.h"

#include <lmdb.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <set>
#include <stdexcept>

#include "core/cpu_cores.h"
#include "data/io/cache_dir.h"
#include "data/io/content_hash.h"
#include "data/index/dataset_config.h"
#include "data/io/dataset_files.h"
#include "data/io/image_decode.h"
#include "data/index/label_index.h"
#include "data/pack/pack_format.h"
#include "data/pack/pack_reader.h"
#include "core/parallel_for.h"
#include "core/elapsed.h"
#include "core/atomic_file.h"

namespace fs = std::filesystem;

namespace kestrel {
namespace {

namespace pf = pack_format;

// One file to store.
struct Item {
  enum class Role { image, label, orphan_label };
  std::string rel;     // key in the pack
  std::string source;  // where it is read from
  Role role = Role::image;
};

// The file's bytes as they go into the pack.
struct Stored {
  bool readable = false;
  std::string bytes;
  uint64_t hash = 0;
  bool reencoded = false;
};

// The key of a dataset file: its path under root, or "external" + its absolute path.
std::string relative_key(const std::string& path, const std::string& root) {
  const std::string prefix = root + "/";
  if (path.rfind(prefix, 0) == 0) return path.substr(prefix.size());
  return "external" + fs::absolute(path).lexically_normal().string();
}

const char* encoder_extension(ImageFormat f) {
  switch (f) {
    case ImageFormat::jpeg: return ".jpg";
    case ImageFormat::png: return ".png";
    case ImageFormat::webp: return ".webp";
    case ImageFormat::bmp: return ".bmp";
    default: return nullptr;
  }
}

// Re-encodes an image whose long side exceeds max_side; false (bytes untouched) when it does not, or when
// it cannot be decoded or re-encoded (the scan reports those).
bool shrink_image(std::string& bytes, const std::string& name, int max_side, int quality) {
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const char* ext = encoder_extension(sniff_image_format(data, bytes.size()));
  if (!ext) return false;
  cv::Mat img;
  try {
    decode_image_bytes(data, bytes.size(), name, 0, img);
  } catch (const ImageError&) {
    return false;
  }
  const int long_side = std::max(img.cols, img.rows);
  if (long_side <= max_side) return false;
  const double r = static_cast<double>(max_side) / long_side;
  cv::Mat small;
  cv::resize(img, small, cv::Size(static_cast<int>(img.cols * r), static_cast<int>(img.rows * r)), 0, 0, cv::INTER_AREA);
  std::vector<unsigned char> encoded;
  if (!cv::imencode(ext, small, encoded, {cv::IMWRITE_JPEG_QUALITY, quality})) return false;
  bytes.assign(encoded.begin(), encoded.end());
  return true;
}

Stored load_item(const Item& item, const PackOptions& o) {
  FileBytes file;
  std::string error;
  Stored s;
  if (!read_file_bytes(item.source, &file, &error)) return s;  // the scan reports it as unreadable
  s.readable = true;
  s.bytes.assign(reinterpret_cast<const char*>(file.data()), file.size());
  if (item.role == Item::Role::image && o.max_side > 0)
    s.reencoded = shrink_image(s.bytes, item.source, o.max_side, o.jpeg_quality);
  s.hash = content_hash64(s.bytes.data(), s.bytes.size());
  return s;
}

// The files to store, sorted by key: the images, their label files (under the key label_path_for_image
// gives inside the pack, so that unpacking puts them where the folder had them), and the label files
// without images.
std::vector<Item> gather_items(const std::set<std::string>& images, const std::vector<std::string>& sources,
                               const std::string& root) {
  std::vector<Item> items;
  std::vector<std::string> label_paths;
  for (const std::string& image : images) {
    const std::string rel = relative_key(image, root);
    items.push_back({rel, image, Item::Role::image});
    const std::string label = label_path_for_image(image);
    label_paths.push_back(label);
    if (file_stamp(label).size >= 0)
      items.push_back({label_path_for_image("/" + rel).substr(1), label, Item::Role::label});
  }
  for (const std::string& orphan : find_orphan_labels(sources, label_paths))
    items.push_back({relative_key(orphan, root), orphan, Item::Role::orphan_label});
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.rel < b.rel; });
  items.erase(std::unique(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.rel == b.rel; }),
              items.end());  // two images sharing one label file
  return items;
}

MDB_val to_val(const std::string& s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }

// A write-once LMDB environment: named databases, puts in key order, periodic commits.
class PackWriter {
 public:
  PackWriter(const std::string& path, size_t map_bytes) : path_(path) {
    check(mdb_env_create(&env_), "create environment");
    mdb_env_set_maxdbs(env_, 4);
    check(mdb_env_set_mapsize(env_, map_bytes), "set map size");
    // No lock file (nobody else opens a temporary), one fsync at the end instead of one per commit.
    check(mdb_env_open(env_, path.c_str(), MDB_NOSUBDIR | MDB_NOLOCK | MDB_NOSYNC, 0644), "create");
    begin();
    for (auto [name, dbi] : {std::pair{pf::kFilesDb, &files}, {pf::kChecksumsDb, &checksums}, {pf::kMetaDb, &meta}})
      check(mdb_dbi_open(txn_, name, MDB_CREATE, dbi), "create database");
  }
  ~PackWriter() {
    if (txn_) mdb_txn_abort(txn_);
    if (env_) mdb_env_close(env_);
  }
  PackWriter(const PackWriter&) = delete;
  PackWriter& operator=(const PackWriter&) = delete;

  // Keys of one database must come in increasing order (MDB_APPEND fills pages completely).
  void append(MDB_dbi dbi, const std::string& key, const std::string& value) { put(dbi, key, value, MDB_APPEND); }
  void put(MDB_dbi dbi, const std::string& key, const std::string& value, unsigned flags = 0) {
    MDB_val k = to_val(key), v = to_val(value);
    check(mdb_put(txn_, dbi, &k, &v, flags), "store " + key + " in");
    pending_ += value.size();
    // A write transaction keeps its dirty pages in memory: commit every 256 MiB.
    if (pending_ > (256u << 20)) commit(), begin();
  }
  void finish() {
    commit();
    check(mdb_env_sync(env_, 1), "sync");
    mdb_env_close(env_);
    env_ = nullptr;
  }
  size_t max_key() const { return static_cast<size_t>(mdb_env_get_maxkeysize(env_)); }

  MDB_dbi files = 0, checksums = 0, meta = 0;

 private:
  void check(int rc, const std::string& what) const {
    if (rc) throw std::runtime_error("pack: cannot " + what + " " + path_ + ": " + mdb_strerror(rc));
  }
  void begin() { check(mdb_txn_begin(env_, nullptr, 0, &txn_), "write"); }
  void commit() {
    const int rc = mdb_txn_commit(txn_);
    txn_ = nullptr;
    pending_ = 0;
    check(rc, "commit to");
  }
  std::string path_;
  MDB_env* env_ = nullptr;
  MDB_txn* txn_ = nullptr;
  size_t pending_ = 0;
};

std::string hash_bytes(uint64_t h) {
  std::string s(sizeof h, '\0');
  for (size_t i = 0; i < sizeof h; ++i) s[i] = static_cast<char>(h >> (8 * i));  // little-endian on any host
  return s;
}

// Scan report paths made relative to the root, so the verdicts stay meaningful wherever the pack goes.
std::string relative_scan_json(const ScanReport& scan, const std::string& root) {
  ScanReport r = scan;
  for (Fault& f : r.faults) f.file = relative_key(f.file, root);
  for (std::string& q : r.quarantined) q = relative_key(q, root);
  return scan_report_to_json(r);
}

// "<out>.yaml": a data.yaml that reads every split from the pack beside it.
std::string write_pack_yaml(const PackOptions& o, const DatasetConfig& cfg, const std::vector<std::string>& splits) {
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "path" << YAML::Value << ".";
  for (const std::string& split : splits)
    y << YAML::Key << split << YAML::Value << fs::path(o.out).filename().string() + pf::kSplitSeparator + split;
  y << YAML::Key << "nc" << YAML::Value << cfg.nc;
  y << YAML::Key << "names" << YAML::Value << YAML::Flow << cfg.names;
  y << YAML::EndMap;
  const std::string path = o.out + ".yaml";
  write_file_atomic(path, std::string("# Written by kestrel pack from ") + cfg.yaml_path + ": the dataset read from " +
                              fs::path(o.out).filename().string() + "\n" + y.c_str() + "\n");
  return path;
}

using SplitImages = std::vector<std::pair<std::string, std::vector<std::string>>>;

// Room for every file plus a page of rounding each, and the tree pages; the file only grows as written.
size_t pack_size_estimate(const std::vector<Item>& items) {
  uint64_t estimate = 64u << 20;
  for (const Item& item : items)
    estimate += static_cast<uint64_t>(std::max<int64_t>(0, file_stamp(item.source).size)) + 8192;
  return static_cast<size_t>(estimate + estimate / 4);
}

// Every item's bytes and checksum, read in parallel chunks and appended in key order; what cannot be
// read is counted in summary.unreadable.
void write_files(PackWriter& writer, const std::vector<Item>& items, const PackOptions& o, PackSummary& summary) {
  for (const Item& item : items)
    if (item.rel.size() > writer.max_key())
      throw std::runtime_error("pack: path too long for a pack key (" + std::to_string(writer.max_key()) +
                               " bytes): " + item.rel);
  const unsigned threads = std::max(1u, o.threads ? o.threads : usable_cores());
  constexpr size_t kChunk = 64;  // files read in parallel, then appended in key order
  std::vector<Stored> chunk;
  for (size_t begin = 0; begin < items.size(); begin += kChunk) {
    const size_t n = std::min(kChunk, items.size() - begin);
    chunk.assign(n, Stored{});
    parallel_for(n, [&](size_t i) { chunk[i] = load_item(items[begin + i], o); }, {threads});
    for (size_t i = 0; i < n; ++i) {
      const Item& item = items[begin + i];
      if (!chunk[i].readable) {
        summary.unreadable.push_back(item.source);
        continue;
      }
      summary.source_bytes += static_cast<uint64_t>(std::max<int64_t>(0, file_stamp(item.source).size));
      summary.reencoded += chunk[i].reencoded;
      ++(item.role == Item::Role::image ? summary.images
         : item.role == Item::Role::label ? summary.labels
                                          : summary.orphan_labels);
      writer.append(writer.files, item.rel, chunk[i].bytes);
      writer.append(writer.checksums, item.rel, hash_bytes(chunk[i].hash));
    }
    if (o.progress) o.progress(begin + n, items.size());
  }
}

// The meta tree: format, the dataset's description, each split's image list and the scan report.
void write_meta(PackWriter& writer, const DatasetConfig& cfg, const SplitImages& split_images, const PackOptions& o,
                PackSummary& summary) {
  nlohmann::json dataset = {{"names", cfg.names},
                            {"nc", cfg.nc},
                            {"source", fs::absolute(o.data_yaml).lexically_normal().string()},
                            {"images", summary.images},
                            {"labels", summary.labels},
                            {"orphan_labels", summary.orphan_labels},
                            {"max_side", o.max_side},
                            {"reencoded", summary.reencoded}};
  // The split lists name what was stored: an image that could not be read is left out, as the index
  // of the folder leaves it out.
  const std::set<std::string> unreadable(summary.unreadable.begin(), summary.unreadable.end());
  for (const auto& [name, split] : split_images) {
    std::string list;
    size_t count = 0;
    for (const std::string& image : split)
      if (!unreadable.count(image)) list += relative_key(image, cfg.root) + "\n", ++count;
    writer.put(writer.meta, pf::kSplitKeyPrefix + name, list);
    summary.splits.emplace_back(name, count);
    dataset["splits"][name] = count;
  }
  writer.put(writer.meta, pf::kFormatKey, pf::kFormat);
  writer.put(writer.meta, pf::kDatasetKey, dataset.dump(1));
  writer.put(writer.meta, pf::kScanKey, relative_scan_json(summary.scan, cfg.root));
}

}  // namespace

PackSummary pack_dataset(const PackOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const DatasetConfig cfg = load_dataset_config(o.data_yaml);
  SplitImages splits = {{"train", cfg.train}, {"val", cfg.val}};
  if (!cfg.test.empty()) splits.emplace_back("test", cfg.test);
  std::vector<std::string> all_sources;
  for (const auto& [name, sources] : splits)
    for (const std::string& s : sources) {
      if (is_pack_source(s)) throw std::runtime_error("pack: " + s + " is already a pack");
      all_sources.push_back(s);
    }

  // The files: every image once, its label file, and the label files without images.
  PackSummary summary;
  SplitImages split_images;
  std::set<std::string> images;
  for (const auto& [name, sources] : splits) {
    split_images.emplace_back(name, list_image_files(sources));
    images.insert(split_images.back().second.begin(), split_images.back().second.end());
  }
  const std::vector<Item> items = gather_items(images, all_sources, cfg.root);

  ScanOptions scan_options = o.scan;
  scan_options.nc = cfg.nc;
  summary.scan = scan_dataset(all_sources, scan_options);

  const std::string tmp = o.out + ".tmp." + std::to_string(::getpid());
  std::error_code ec;
  fs::remove(tmp, ec);
  if (fs::path(o.out).has_parent_path()) fs::create_directories(fs::path(o.out).parent_path(), ec);
  try {
    PackWriter writer(tmp, pack_size_estimate(items));
    write_files(writer, items, o, summary);
    write_meta(writer, cfg, split_images, o, summary);
    writer.finish();
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
  fs::rename(tmp, o.out);  // readers see the old pack or the whole new one
  summary.pack_bytes = fs::file_size(o.out);
  std::vector<std::string> split_names;
  for (const auto& [name, count] : summary.splits) split_names.push_back(name);
  summary.yaml_path = write_pack_yaml(o, cfg, split_names);
  summary.seconds = seconds_since(t0);
  return summary;
}

}  // namespace kestrel
