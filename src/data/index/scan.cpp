// Dataset scan: image and label checks on a pool of threads, orphan labels, and the scan cache.
#include "data/index/scan.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <iterator>
#include <mutex>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <thread>

#include "data/io/cache_dir.h"
#include "data/io/dataset_files.h"
#include "data/io/image_decode.h"
#include "data/index/label_index.h"
#include "data/index/label_parse.h"
#include "core/parallel_for.h"
#include "core/elapsed.h"
#include "core/atomic_file.h"

namespace fs = std::filesystem;

namespace kestrel {
namespace {

constexpr char kCacheVersion[] = "kestrel-scan-v1";

std::string lower_extension(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

const char* format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::jpeg: return "JPEG";
    case ImageFormat::png: return "PNG";
    case ImageFormat::bmp: return "BMP";
    case ImageFormat::webp: return "WebP";
    case ImageFormat::tiff: return "TIFF";
    case ImageFormat::unknown: break;
  }
  return "unrecognised";
}

// The format an extension promises; false for extensions whose content has no magic we check (.pfm).
bool format_for_extension(const std::string& path, ImageFormat* format) {
  const std::string ext = lower_extension(path);
  if (ext == ".jpg" || ext == ".jpeg" || ext == ".mpo") *format = ImageFormat::jpeg;
  else if (ext == ".png") *format = ImageFormat::png;
  else if (ext == ".bmp") *format = ImageFormat::bmp;
  else if (ext == ".webp") *format = ImageFormat::webp;
  else if (ext == ".tif" || ext == ".tiff" || ext == ".dng") *format = ImageFormat::tiff;  // DNG is TIFF-structured
  else return false;
  return true;
}

// A PNG ends with its IEND chunk; decoders tolerate bytes after it, so look near the end, not at it.
bool png_has_iend(const unsigned char* data, size_t size) {
  static const unsigned char kIend[8] = {0, 0, 0, 0, 'I', 'E', 'N', 'D'};
  const size_t window = std::min<size_t>(size, 4096);
  const unsigned char* begin = data + size - window;
  return std::search(begin, data + size, kIend, kIend + sizeof kIend) != data + size;
}

// What one image and its label file contributed.
struct ImageCheck {
  std::vector<Fault> faults;
  bool quarantine = false;
  bool has_label_file = false;
  size_t instances = 0;
};

void check_image_file(const std::string& path, ImageCheck& c, cv::Mat& scratch) {
  auto fault = [&](FaultKind kind, std::string detail) {
    c.faults.push_back({kind, path, 0, std::move(detail)});
    c.quarantine |= fault_kind_info(kind).quarantines_image;
  };
  FileBytes bytes;
  std::string error;
  if (!read_file_bytes(path, &bytes, &error)) return fault(FaultKind::unreadable_image, error);
  const unsigned char* data = bytes.data();
  const size_t size = bytes.size();
  if (size == 0) return fault(FaultKind::zero_byte_image, "the file is empty");
  const ImageFormat format = sniff_image_format(data, size);
  const bool truncated = (format == ImageFormat::jpeg && !(size >= 2 && data[size - 2] == 0xFF && data[size - 1] == 0xD9)) ||
                         (format == ImageFormat::png && !png_has_iend(data, size));
  int w = 0, h = 0;
  std::string warning, decode_error;
  try {
    decode_image_bytes(data, size, path, /*min_long_side=*/1, scratch, &w, &h, &warning);
  } catch (const ImageError& e) {
    decode_error = e.what();
  }
  if (warning.rfind(path + ": ", 0) == 0) warning.erase(0, path.size() + 2);  // the fault names the file already
  if (truncated) {
    std::string detail = format == ImageFormat::jpeg ? "JPEG has no end marker (FF D9)" : "PNG has no IEND chunk";
    const std::string& why = decode_error.empty() ? warning : decode_error;
    fault(FaultKind::truncated_image, why.empty() ? detail : detail + "; " + why);
  } else if (!decode_error.empty()) {
    fault(FaultKind::corrupt_image, decode_error);
  } else if (!warning.empty()) {
    fault(FaultKind::corrupt_image, "decoder warning: " + warning);
  } else if (w < 10 || h < 10) {
    fault(FaultKind::tiny_image, std::to_string(w) + "x" + std::to_string(h) + " pixels (< 10)");
  }
  ImageFormat promised;
  if (decode_error.empty() && format_for_extension(path, &promised) && format != promised)
    fault(FaultKind::wrong_extension, std::string(format_name(format)) + " data in a " + lower_extension(path) + " file");
}

ImageCheck check_image(const std::string& image, const std::string& label, bool label_exists, const ScanOptions& o,
                       cv::Mat& scratch) {
  ImageCheck c;
  check_image_file(image, c, scratch);
  if (!label_exists) return c;
  c.has_label_file = true;
  std::string text;
  if (!read_text_file(label, &text)) {
    c.faults.push_back({FaultKind::unreadable_label, label, 0, "cannot read the label file"});
    c.quarantine = true;  // the index drops an image whose labels it cannot read
    return c;
  }
  const ParsedLabels parsed = parse_label_text(text, o.nc, o.single_cls);
  for (const LabelLineFault& f : parsed.faults) c.faults.push_back({f.kind, label, f.line, f.detail});
  c.instances = parsed.labels.size();
  return c;
}

// Runs the checks on `threads` threads while the calling thread reports progress.
std::vector<ImageCheck> check_all(const std::vector<std::string>& images, const std::vector<std::string>& labels,
                                  const std::vector<FileStamp>& label_stamps, const ScanOptions& o) {
  const size_t n = images.size();
  std::vector<ImageCheck> checks(n);
  ParallelOptions po;
  po.threads = o.threads;
  po.progress = o.progress;
  parallel_for(n, [&](size_t i) {
    thread_local cv::Mat scratch;
    try {
      checks[i] = check_image(images[i], labels[i], label_stamps[i].size >= 0, o, scratch);
    } catch (const std::exception& e) {  // e.g. out of memory on a huge image: report it, keep scanning
      checks[i] = ImageCheck{};
      checks[i].faults.push_back({FaultKind::corrupt_image, images[i], 0, e.what()});
      checks[i].quarantine = true;
    }
  }, po);
  return checks;
}

uint64_t cache_key(const std::vector<std::string>& images, const std::vector<FileStamp>& image_stamps,
                   const std::vector<FileStamp>& label_stamps, const ScanOptions& o) {
  return dataset_key(kCacheVersion, sizeof kCacheVersion, o.nc, o.single_cls, images, image_stamps, label_stamps);
}

bool load_cache(const std::string& path, uint64_t key, ScanReport* report) {
  std::string text;
  if (path.empty() || !read_text_file(path, &text)) return false;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || j.value("version", "") != kCacheVersion || j.value("key", uint64_t{0}) != key) return false;
  return scan_report_from_json(j["report"].dump(), report);
}

void store_cache(const std::string& beside, const std::string& user, uint64_t key, const ScanReport& report,
                 std::string* written) {
  const nlohmann::json j = {
      {"version", kCacheVersion}, {"key", key}, {"report", nlohmann::json::parse(scan_report_to_json(report))}};
  *written = save_dataset_cache(beside, user, j.dump(), "scan cache", "the next run checks every image again");
}

bool fault_order(const Fault& a, const Fault& b) {
  if (a.file != b.file) return a.file < b.file;
  if (a.line != b.line) return a.line < b.line;
  return a.kind < b.kind;
}

}  // namespace

size_t ScanReport::count(FaultKind kind) const {
  return static_cast<size_t>(std::count_if(faults.begin(), faults.end(), [&](const Fault& f) { return f.kind == kind; }));
}

size_t ScanReport::count_image_faults() const {
  return static_cast<size_t>(std::count_if(faults.begin(), faults.end(), [](const Fault& f) {
    return fault_kind_info(f.kind).quarantines_image;
  }));
}

ScanReport scan_dataset(const std::vector<std::string>& sources, const ScanOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> images = list_image_files(sources);
  images.erase(std::unique(images.begin(), images.end()), images.end());  // sorted: a source listed twice
  const size_t n = images.size();
  std::vector<std::string> labels(n);
  std::vector<FileStamp> image_stamps(n), label_stamps(n);
  for (size_t i = 0; i < n; ++i) {
    labels[i] = label_path_for_image(images[i]);
    image_stamps[i] = file_stamp(images[i]);
    label_stamps[i] = file_stamp(labels[i]);
  }

  ScanReport report;
  const uint64_t key = cache_key(images, image_stamps, label_stamps, o);
  const auto [beside, user] = n ? dataset_cache_locations(labels.front(), ".kestrel.scan", "scan")
                                : std::pair<std::string, std::string>{};
  if (o.use_cache)
    for (const std::string& candidate : {beside, user})
      if (load_cache(candidate, key, &report)) {
        report.from_cache = true;
        report.cache_path = candidate;
        break;
      }
  if (!report.from_cache) {
    std::vector<ImageCheck> checks = check_all(images, labels, label_stamps, o);
    report.images = n;
    for (size_t i = 0; i < n; ++i) {
      ImageCheck& c = checks[i];
      report.label_files += c.has_label_file;
      report.instances += c.instances;
      ++(c.instances ? report.labelled : report.backgrounds);
      if (c.quarantine) report.quarantined.push_back(images[i]);
      std::move(c.faults.begin(), c.faults.end(), std::back_inserter(report.faults));
    }
    std::sort(report.faults.begin(), report.faults.end(), fault_order);
    if (o.use_cache && n) store_cache(beside, user, key, report, &report.cache_path);
  }
  // Orphan labels are not part of the key (a new stray file would not change it): found afresh each time.
  for (const std::string& orphan : find_orphan_labels(sources, labels))
    report.faults.push_back({FaultKind::label_without_image, orphan, 0, "no image uses this label file"});
  std::sort(report.faults.begin(), report.faults.end(), fault_order);
  report.sources = sources;
  report.seconds = seconds_since(t0);
  return report;
}

std::string scan_report_to_json(const ScanReport& r) {
  nlohmann::json counts = nlohmann::json::object();
  for (int k = 0; k < kFaultKindCount; ++k) {
    const FaultKind kind = static_cast<FaultKind>(k);
    counts[fault_kind_info(kind).name] = r.count(kind);
  }
  nlohmann::json faults = nlohmann::json::array();
  for (const Fault& f : r.faults)
    faults.push_back({{"kind", fault_kind_info(f.kind).name}, {"file", f.file}, {"line", f.line}, {"detail", f.detail}});
  const nlohmann::json j = {{"sources", r.sources},       {"images", r.images},         {"label_files", r.label_files},
                            {"labelled", r.labelled},     {"backgrounds", r.backgrounds}, {"instances", r.instances},
                            {"fault_counts", counts},     {"faults", faults},           {"quarantined", r.quarantined},
                            {"seconds", r.seconds}};
  return j.dump(1);
}

bool scan_report_from_json(const std::string& text, ScanReport* out) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return false;
  try {
    ScanReport r;
    r.sources = j.at("sources").get<std::vector<std::string>>();
    r.images = j.at("images").get<size_t>();
    r.label_files = j.at("label_files").get<size_t>();
    r.labelled = j.at("labelled").get<size_t>();
    r.backgrounds = j.at("backgrounds").get<size_t>();
    r.instances = j.at("instances").get<size_t>();
    r.quarantined = j.at("quarantined").get<std::vector<std::string>>();
    r.seconds = j.at("seconds").get<double>();
    for (const nlohmann::json& f : j.at("faults")) {
      Fault fault{FaultKind::corrupt_image, f.at("file").get<std::string>(), f.at("line").get<size_t>(),
                  f.at("detail").get<std::string>()};
      if (!fault_kind_from_name(f.at("kind").get<std::string>(), &fault.kind)) return false;
      r.faults.push_back(std::move(fault));
    }
    *out = std::move(r);
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

}  // namespace kestrel
