// Dataset index: image discovery, label parsing and validation, and the on-disk index cache.
#include "data/label_index.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <thread>

#include "data/cache_dir.h"
#include "data/image_decode.h"

namespace fs = std::filesystem;

namespace kestrel {
namespace {

constexpr char kCacheMagic[8] = {'K', 'S', 'T', 'R', 'L', 'I', 'X', '1'};

struct FileStamp {
  int64_t size = -1;  // -1: missing
  int64_t mtime_ns = 0;
};

FileStamp stamp_of(const std::string& path) {
  struct stat st;
  FileStamp s;
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    s.size = static_cast<int64_t>(st.st_size);
    s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  }
  return s;
}

// Runs fn(i) for i in [0, n) on up to two threads (the scan is I/O- and parse-bound; two is plenty).
template <typename Fn>
void parallel_for(size_t n, Fn fn) {
  const unsigned threads = std::min<unsigned>(2, std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) fn(i);
  };
  if (threads < 2 || n < 64) return work();
  std::thread helper(work);
  work();
  helper.join();
}

// ---- label parsing

using Row = std::array<float, 5>;

// One number as Python's float() reads it, then cast to float32 (numpy's str -> float32 path).
bool parse_number(const std::string& token, float* out) {
  const char* begin = token.data();
  const char* end = begin + token.size();
  if (begin != end && *begin == '+') ++begin;
  double v = 0;
  const auto [ptr, ec] = std::from_chars(begin, end, v);
  if (ec != std::errc() || ptr != end) return false;
  *out = static_cast<float>(v);
  return true;
}

struct ParsedLabels {
  std::vector<Label> labels;
  std::vector<std::string> warnings;
  size_t bad_lines = 0, duplicates = 0;
};

ParsedLabels parse_labels(const std::string& text, const std::string& file, int nc, bool single_cls) {
  ParsedLabels out;
  // Split into lines (\n, \r\n or \r) and whitespace tokens, keeping 1-based line numbers.
  std::vector<std::pair<size_t, std::vector<std::string>>> lines;
  size_t line_no = 0;
  for (size_t pos = 0; pos <= text.size();) {
    size_t end = text.find_first_of("\r\n", pos);
    if (end == std::string::npos) end = text.size();
    ++line_no;
    std::vector<std::string> row;
    for (size_t i = pos; i < end;) {
      while (i < end && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
      size_t j = i;
      while (j < end && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
      if (j > i) row.emplace_back(text, i, j - i);
      i = j;
    }
    if (!row.empty()) lines.emplace_back(line_no, std::move(row));
    if (end < text.size() && text[end] == '\r' && end + 1 < text.size() && text[end + 1] == '\n') ++end;
    pos = end + 1;
  }
  const bool polygons = std::any_of(lines.begin(), lines.end(), [](const auto& l) { return l.second.size() > 6; });

  std::vector<Row> rows;
  for (const auto& [no, tokens] : lines) {
    auto reject = [&, no = no](const std::string& why) {
      ++out.bad_lines;
      out.warnings.push_back(file + ":" + std::to_string(no) + ": " + why + "; line skipped");
    };
    std::vector<float> v(tokens.size());
    size_t bad_token = tokens.size();
    for (size_t i = 0; i < tokens.size() && bad_token == tokens.size(); ++i)
      if (!parse_number(tokens[i], &v[i])) bad_token = i;
    if (bad_token < tokens.size()) {
      reject("not a number: '" + tokens[bad_token] + "'");
      continue;
    }
    Row row{v[0], 0, 0, 0, 0};
    if (!polygons) {
      if (tokens.size() != 5) {
        reject("expected 5 columns (class x y w h), got " + std::to_string(tokens.size()));
        continue;
      }
      std::copy(v.begin() + 1, v.end(), row.begin() + 1);
    } else {
      const size_t coords = tokens.size() - 1;
      if (coords < 2 || coords % 2 != 0) {
        reject("a polygon row needs class and an even number of coordinates, got " + std::to_string(tokens.size()) +
               " columns");
        continue;
      }
      float x1 = v[1], y1 = v[2], x2 = v[1], y2 = v[2];
      for (size_t i = 1; i + 1 < v.size(); i += 2) {
        x1 = std::min(x1, v[i]), x2 = std::max(x2, v[i]);
        y1 = std::min(y1, v[i + 1]), y2 = std::max(y2, v[i + 1]);
      }
      row = {v[0], (x1 + x2) / 2.0f, (y1 + y2) / 2.0f, x2 - x1, y2 - y1};  // float32, as xyxy2xywh
    }
    const float cls = row[0];
    if (!(cls >= 0) || cls != static_cast<float>(static_cast<long long>(cls))) {
      reject("class must be a non-negative integer, got " + tokens[0]);
      continue;
    }
    if (!single_cls && cls >= static_cast<float>(nc)) {
      reject("class " + tokens[0] + " exceeds nc=" + std::to_string(nc) + " (classes are 0.." +
             std::to_string(nc - 1) + ")");
      continue;
    }
    if (!std::all_of(row.begin() + 1, row.end(), [](float c) { return c >= 0 && c <= 1; })) {
      reject("coordinates must be normalized to [0, 1]");
      continue;
    }
    rows.push_back(row);
  }
  // YOLOv5 deduplicates with np.unique(axis=0): when a duplicate exists the rows come back sorted.
  std::vector<Row> unique = rows;
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  if (unique.size() < rows.size()) {
    out.duplicates = rows.size() - unique.size();
    out.warnings.push_back(file + ": " + std::to_string(out.duplicates) + " duplicate label(s) removed");
    rows = std::move(unique);
  }
  out.labels.reserve(rows.size());
  for (const Row& r : rows) out.labels.push_back({single_cls ? 0.0f : r[0], r[1], r[2], r[3], r[4]});
  return out;
}

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
    std::ifstream in(label, std::ios::binary);
    if (!in) {
      r.warnings.push_back(label + ": cannot read label file; ignoring image " + image);
      return r;
    }
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ParsedLabels parsed = parse_labels(text, label, nc, single_cls);
    r.record.label_path = label;
    r.record.labels = std::move(parsed.labels);
    r.warnings.insert(r.warnings.end(), parsed.warnings.begin(), parsed.warnings.end());
    r.bad_lines = parsed.bad_lines;
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

std::string hex64(uint64_t v) {
  char s[17];
  std::snprintf(s, sizeof s, "%016llx", static_cast<unsigned long long>(v));
  return s;
}

// The cache beside the labels (YOLOv5's labels/<split>.cache, renamed) and its fallback in the user cache.
std::pair<std::string, std::string> cache_locations(const std::string& first_label_path) {
  const std::string beside = fs::path(first_label_path).parent_path().string() + ".kestrel.cache";
  const std::string user = user_cache_dir();
  return {beside, user.empty() ? "" : user + "/index/" + hex64(fnv1a64(beside.data(), beside.size())) + ".cache"};
}

// Label files that no image points to, in the label folders that mirror folder sources (searched recursively).
// List-file sources may pick a subset of a folder on purpose, so their folders are not searched.
size_t count_orphans(const std::vector<std::string>& sources, const std::vector<std::string>& label_paths,
                     std::string* example) {
  const std::set<std::string> expected(label_paths.begin(), label_paths.end());
  size_t orphans = 0;
  for (const std::string& source : sources) {
    std::error_code ec;
    if (!fs::is_directory(source, ec)) continue;
    const fs::path mirror = fs::path(label_path_for_image((fs::path(source) / "x.jpg").string())).parent_path();
    if (mirror == fs::path(source)) continue;  // labels beside the images: nothing mirrors
    for (fs::recursive_directory_iterator it(mirror, ec), end; !ec && it != end; it.increment(ec)) {
      const fs::path& p = it->path();
      const std::string name = p.filename().string();
      if (name.empty() || name[0] == '.' || p.extension() != ".txt" || !it->is_regular_file(ec)) continue;
      if (!expected.count(p.string()) && orphans++ == 0) *example = p.string();
    }
  }
  return orphans;
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

}  // namespace

bool has_image_extension(const std::string& path) {
  static const std::set<std::string> kFormats = {"bmp", "dng", "jpeg", "jpg", "mpo", "png", "tif", "tiff", "webp", "pfm"};
  const size_t dot = path.rfind('.');
  return dot != std::string::npos && kFormats.count(lower(path.substr(dot + 1))) > 0;
}

std::string label_path_for_image(const std::string& image_path) {
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
    if (fs::is_directory(src, ec)) {
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
    image_stamps[i] = stamp_of(images[i]);
    label_stamps[i] = stamp_of(labels[i]);
  });

  uint64_t key = fnv1a64("kestrel-index-v1", 16);
  const int32_t settings[2] = {nc, single_cls ? 1 : 0};
  key = fnv1a64(settings, sizeof settings, key);
  for (size_t i = 0; i < n; ++i) {
    key = fnv1a64(images[i].c_str(), images[i].size() + 1, key);
    key = fnv1a64(&image_stamps[i], sizeof(FileStamp), key);
    key = fnv1a64(&label_stamps[i], sizeof(FileStamp), key);
  }

  DatasetIndex index;
  const auto [beside, user] = cache_locations(labels.front());
  for (const std::string& candidate : {beside, user}) {
    if (!candidate.empty() && decode_cache(candidate, key, &index)) {
      index.from_cache = true;
      index.cache_path = candidate;
      break;
    }
  }
  if (!index.from_cache) {
    std::vector<ScanResult> results(n);
    parallel_for(n, [&](size_t i) {
      try {
        results[i] = scan_image(images[i], labels[i], label_stamps[i].size >= 0, nc, single_cls);
      } catch (const std::exception& e) {  // e.g. out of memory on a huge file: skip it, keep the scan going
        results[i] = ScanResult{};
        results[i].warnings.push_back(images[i] + ": ignoring image (" + e.what() + ")");
      }
    });
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
    const std::string bytes = encode_cache(key, index);
    const bool beside_ok = dir_is_writable(fs::path(beside).parent_path().string());
    for (const std::string& target : {beside_ok ? beside : std::string(), user}) {
      if (target.empty()) continue;
      try {
        write_file_atomic(target, bytes);
        index.cache_path = target;
        break;
      } catch (const std::runtime_error&) {
        // not writable there: try the next place; without a cache the next run rescans
      }
    }
  }
  std::string example;
  index.stats.orphan_label_files = count_orphans(sources, labels, &example);
  if (index.stats.orphan_label_files)
    index.warnings.push_back(std::to_string(index.stats.orphan_label_files) +
                             " label file(s) have no image and are ignored, e.g. " + example);
  return index;
}

}  // namespace kestrel
