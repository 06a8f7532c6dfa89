// Dataset index: image discovery, label parsing and validation, and the on-disk index cache.
#include "data/index/label_index.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <thread>

#include "data/io/cache_dir.h"
#include "data/io/dataset_files.h"
#include "data/io/image_decode.h"
#include "data/index/label_parse.h"
#include "data/pack/pack_reader.h"
#include "core/parallel_for.h"
#include "core/atomic_file.h"

namespace fs = std::filesystem;

namespace kestrel {
namespace {

constexpr char kCacheMagic[8] = {'K', 'S', 'T', 'R', 'L', 'I', 'X', '1'};

// ---- per-image scan

struct ScanResult {
  bool usable = false;
  ImageRecord record;
  std::vector<std::string> warnings;
  size_t bad_lines = 0, duplicates = 0;
};

ScanResult scan_image(const std::string& image, const std::string& label, bool label_exists, int nc,
                      bool single_cls) {
  ScanResult r;
  ImageHeader header;
  if (!read_image_header(image, &header)) {
    r.warnings.push_back(image + ": ignoring corrupt image (missing, empty or unreadable header)");
    return r;
  }
  if (header.width < 10 || header.height < 10) {
    r.warnings.push_back(image + ": ignoring image of " + std::to_string(header.width) + "x" +
                         std::to_string(header.height) + " pixels (< 10)");
    return r;
  }
  if (header.jpeg_missing_eoi)
    r.warnings.push_back(image + ": JPEG has no end marker (truncated?); it decodes with the missing part filled");
  r.record.image_path = image;
  r.record.width = header.width;
  r.record.height = header.height;
  if (label_exists) {
    std::string text;
    if (!read_text_file(label, &text)) {
      r.warnings.push_back(label + ": cannot read label file; ignoring image " + image);
      return r;
    }
    ParsedLabels parsed = parse_label_text(text, nc, single_cls);
    r.record.label_path = label;
    r.record.labels = std::move(parsed.labels);
    for (const LabelLineFault& f : parsed.faults)
      if (f.skipped && f.kind != FaultKind::label_duplicate_line)
        r.warnings.push_back(label + ":" + std::to_string(f.line) + ": " + f.detail + "; line skipped");
    if (parsed.duplicates)
      r.warnings.push_back(label + ": " + std::to_string(parsed.duplicates) + " duplicate label(s) removed");
    r.bad_lines = parsed.skipped_lines;
    r.duplicates = parsed.duplicates;
  }
  r.usable = true;
  return r;
}

// ---- cache file

class Writer {
 public:
  template <typename T>
  void pod(const T& v) {
    buf_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void str(const std::string& s) {
    pod<uint64_t>(s.size());
    buf_ += s;
  }
  std::string& bytes() { return buf_; }

 private:
  std::string buf_;
};

class Reader {
 public:
  Reader(const char* p, size_t n) : p_(p), end_(p + n) {}
  template <typename T>
  bool pod(T* v) {
    if (static_cast<size_t>(end_ - p_) < sizeof(T)) return false;
    std::memcpy(v, p_, sizeof(T));
    p_ += sizeof(T);
    return true;
  }
  bool str(std::string* s) {
    uint64_t n = 0;
    if (!pod(&n) || static_cast<uint64_t>(end_ - p_) < n) return false;
    s->assign(p_, n);
    p_ += n;
    return true;
  }
  bool done() const { return p_ == end_; }

 private:
  const char* p_;
  const char* end_;
};

std::string encode_cache(uint64_t key, const DatasetIndex& index) {
  Writer w;
  w.pod<uint64_t>(index.records.size());
  for (const ImageRecord& r : index.records) {
    w.str(r.image_path);
    w.str(r.label_path);
    w.pod<int32_t>(r.width);
    w.pod<int32_t>(r.height);
    w.pod<uint64_t>(r.labels.size());
    for (const Label& l : r.labels) w.pod(l);
  }
  const IndexStats& s = index.stats;
  for (size_t v : {s.images, s.labelled, s.backgrounds, s.instances, s.corrupt_images, s.bad_label_lines,
                   s.duplicate_labels})
    w.pod<uint64_t>(v);
  w.pod<uint64_t>(index.warnings.size());
  for (const std::string& m : index.warnings) w.str(m);
  const std::string body = std::move(w.bytes());
  std::string file(kCacheMagic, sizeof kCacheMagic);
  file.append(reinterpret_cast<const char*>(&key), sizeof key);
  const uint64_t check = fnv1a64(body.data(), body.size());
  file.append(reinterpret_cast<const char*>(&check), sizeof check);
  return file + body;
}

bool decode_cache(const std::string& path, uint64_t key, DatasetIndex* index) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  constexpr size_t kHead = sizeof kCacheMagic + 2 * sizeof(uint64_t);
  if (file.size() < kHead || std::memcmp(file.data(), kCacheMagic, sizeof kCacheMagic) != 0) return false;
  uint64_t file_key = 0, check = 0;
  std::memcpy(&file_key, file.data() + sizeof kCacheMagic, sizeof file_key);
  std::memcpy(&check, file.data() + sizeof kCacheMagic + sizeof file_key, sizeof check);
  if (file_key != key || check != fnv1a64(file.data() + kHead, file.size() - kHead)) return false;

  Reader r(file.data() + kHead, file.size() - kHead);
  DatasetIndex out;
  uint64_t n = 0;
  if (!r.pod(&n)) return false;
  for (uint64_t i = 0; i < n; ++i) {
    ImageRecord rec;
    int32_t w = 0, h = 0;
    uint64_t nl = 0;
    if (!r.str(&rec.image_path) || !r.str(&rec.label_path) || !r.pod(&w) || !r.pod(&h) || !r.pod(&nl)) return false;
    rec.width = w, rec.height = h;
    for (uint64_t j = 0; j < nl; ++j) {
      Label l;
      if (!r.pod(&l)) return false;
      rec.labels.push_back(l);
    }
    out.records.push_back(std::move(rec));
  }
  IndexStats& s = out.stats;
  for (size_t* v : {&s.images, &s.labelled, &s.backgrounds, &s.instances, &s.corrupt_images, &s.bad_label_lines,
                    &s.duplicate_labels}) {
    uint64_t x = 0;
    if (!r.pod(&x)) return false;
    *v = x;
  }
  uint64_t nw = 0;
  if (!r.pod(&nw)) return false;
  for (uint64_t i = 0; i < nw; ++i) {
    std::string m;
    if (!r.str(&m)) return false;
    out.warnings.push_back(std::move(m));
  }
  if (!r.done()) return false;
  *index = std::move(out);
  return true;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void read_list_file(const fs::path& list, std::vector<std::string>* out) {
  std::ifstream in(list);
  if (!in) throw std::runtime_error("cannot read image list " + list.string());
  const fs::path parent = list.parent_path();
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    if (line.empty()) continue;
    if (line.rfind("./", 0) == 0) {
      out->push_back((parent / line.substr(2)).string());
    } else {
      std::error_code ec;
      const fs::path p(line);
      out->push_back(p.is_absolute() || fs::exists(p, ec) ? line : (parent / p).string());
    }
  }
}

// Scans every image and its label file (two threads) into index.records and index.stats; an image
// that cannot be used is counted and reported, never fatal.
void scan_into(DatasetIndex& index, const std::vector<std::string>& images, const std::vector<std::string>& labels,
               const std::vector<FileStamp>& label_stamps, int nc, bool single_cls) {
  const size_t n = images.size();
  std::vector<ScanResult> results(n);
  parallel_for(n, [&](size_t i) {
    try {
      results[i] = scan_image(images[i], labels[i], label_stamps[i].size >= 0, nc, single_cls);
    } catch (const std::exception& e) {  // e.g. out of memory on a huge file: skip it, keep the scan going
      results[i] = ScanResult{};
      results[i].warnings.push_back(images[i] + ": ignoring image (" + e.what() + ")");
    }
  }, {n < 64 ? 1u : 2u});  // the scan is I/O- and parse-bound: two threads are plenty
  IndexStats& s = index.stats;
  for (ScanResult& r : results) {
    index.warnings.insert(index.warnings.end(), r.warnings.begin(), r.warnings.end());
    s.bad_label_lines += r.bad_lines;
    s.duplicate_labels += r.duplicates;
    if (!r.usable) {
      ++s.corrupt_images;
      continue;
    }
    s.instances += r.record.labels.size();
    ++(r.record.labels.empty() ? s.backgrounds : s.labelled);
    index.records.push_back(std::move(r.record));
  }
  s.images = index.records.size();
}

// The index cache, beside the labels when that folder is writable, else in the user's cache folder.
void save_cache(DatasetIndex& index, uint64_t key, const std::string& beside, const std::string& user) {
  index.cache_path = save_dataset_cache(beside, user, encode_cache(key, index), "labels cache",
                                        "the next run reads every label again");
}

}  // namespace

bool has_image_extension(const std::string& path) {
  static const std::set<std::string> kFormats = {"bmp", "dng", "jpeg", "jpg", "mpo", "png", "tif", "tiff", "webp", "pfm"};
  const size_t dot = path.rfind('.');
  return dot != std::string::npos && kFormats.count(lower(path.substr(dot + 1))) > 0;
}

std::string label_path_for_image(const std::string& image_path) {
  std::string pack_file, rel;
  if (split_pack_path(image_path, &pack_file, &rel))  // the same rule inside the pack, from its root
    return make_pack_path(pack_file, label_path_for_image("/" + rel).substr(1));
  std::string p = image_path;
  const size_t at = p.rfind("/images/");
  if (at != std::string::npos) p.replace(at, 8, "/labels/");
  const size_t dot = p.rfind('.');
  if (dot != std::string::npos) p.erase(dot);
  return p + ".txt";
}

std::vector<std::string> list_image_files(const std::vector<std::string>& sources) {
  std::vector<std::string> files;
  for (const std::string& source : sources) {
    std::error_code ec;
    const fs::path src(source);
    if (is_pack_source(source)) {
      const std::vector<std::string> packed = pack_source_images(source);
      files.insert(files.end(), packed.begin(), packed.end());
    } else if (fs::is_directory(src, ec)) {
      const auto opts = fs::directory_options::follow_directory_symlink | fs::directory_options::skip_permission_denied;
      for (fs::recursive_directory_iterator it(src, opts, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (!name.empty() && name[0] == '.') {  // glob skips hidden entries
          if (it->is_directory(ec)) it.disable_recursion_pending();
          continue;
        }
        if (it->is_regular_file(ec) && has_image_extension(name)) files.push_back(it->path().string());
      }
      if (ec) throw std::runtime_error("cannot list " + source + ": " + ec.message());
    } else if (fs::is_regular_file(src, ec)) {
      if (has_image_extension(source))
        files.push_back(source);
      else
        read_list_file(src, &files);
    } else {
      throw std::runtime_error("dataset source " + source + " does not exist");
    }
  }
  files.erase(std::remove_if(files.begin(), files.end(), [](const std::string& f) { return !has_image_extension(f); }),
              files.end());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> find_orphan_labels(const std::vector<std::string>& sources,
                                            const std::vector<std::string>& label_paths) {
  const std::set<std::string> expected(label_paths.begin(), label_paths.end());
  std::set<std::string> orphans;
  for (const std::string& source : sources) {
    std::error_code ec;
    if (!fs::is_directory(source, ec)) continue;
    const fs::path mirror = fs::path(label_path_for_image((fs::path(source) / "x.jpg").string())).parent_path();
    if (mirror == fs::path(source)) continue;  // labels beside the images: nothing mirrors
    for (fs::recursive_directory_iterator it(mirror, ec), end; !ec && it != end; it.increment(ec)) {
      const fs::path& p = it->path();
      const std::string name = p.filename().string();
      if (name.empty() || name[0] == '.' || p.extension() != ".txt" || !it->is_regular_file(ec)) continue;
      if (!expected.count(p.string())) orphans.insert(p.string());
    }
  }
  return {orphans.begin(), orphans.end()};
}

DatasetIndex build_index(const std::vector<std::string>& sources, int nc, bool single_cls) {
  const std::vector<std::string> images = list_image_files(sources);
  if (images.empty()) {
    std::string names;
    for (const std::string& s : sources) names += (names.empty() ? "" : ", ") + s;
    throw std::runtime_error("no images found in " + names);
  }
  const size_t n = images.size();
  std::vector<std::string> labels(n);
  std::vector<FileStamp> image_stamps(n), label_stamps(n);
  parallel_for(n, [&](size_t i) {
    labels[i] = label_path_for_image(images[i]);
    image_stamps[i] = file_stamp(images[i]);
    label_stamps[i] = file_stamp(labels[i]);
  });

  const uint64_t key = dataset_key("kestrel-index-v1", 16, nc, single_cls, images, image_stamps, label_stamps);

  DatasetIndex index;
  const auto [beside, user] = dataset_cache_locations(labels.front(), ".kestrel.cache", "index");
  for (const std::string& candidate : {beside, user}) {
    if (!candidate.empty() && decode_cache(candidate, key, &index)) {
      index.from_cache = true;
      index.cache_path = candidate;
      break;
    }
  }
  if (!index.from_cache) {
    scan_into(index, images, labels, label_stamps, nc, single_cls);
    save_cache(index, key, beside, user);
  }
  const std::vector<std::string> orphans = find_orphan_labels(sources, labels);
  index.stats.orphan_label_files = orphans.size();
  if (!orphans.empty())
    index.warnings.push_back(std::to_string(orphans.size()) + " label file(s) have no image and are ignored, e.g. " +
                             orphans.front());
  return index;
}

}  // namespace kestrel
