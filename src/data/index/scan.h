// `kestrel scan`: a health check of a dataset before training. Every image is read and decoded, every
// label file parsed, and each problem reported with its file (and line, for labels) and a FaultKind.
// The scan never writes into the dataset; its result is cached (beside the labels when writable, else in
// the user cache folder) under a key over the image and label paths, sizes and mtimes, so a scan of
// unchanged data costs one stat per file.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "data/index/fault_kind.h"

namespace kestrel {

struct Fault {
  FaultKind kind;
  std::string file;    // the image or label file (a pack path inside a pack)
  size_t line = 0;     // 1-based label line; 0 for a whole file
  std::string detail;  // what is wrong, in words
};

struct ScanReport {
  std::vector<std::string> sources;
  size_t images = 0;       // image files listed by the sources (each once)
  size_t label_files = 0;  // label files that belong to an image
  size_t labelled = 0;     // images with at least one usable label
  size_t backgrounds = 0;  // the other images: no label file, or no usable row (counted, not a fault)
  size_t instances = 0;    // usable label rows
  std::vector<Fault> faults;             // sorted by file, then line
  std::vector<std::string> quarantined;  // images with a fault whose kind quarantines_image, sorted
  bool from_cache = false;
  std::string cache_path;  // the cache file read or written ("" when none could be written)
  double seconds = 0;      // wall time of this scan (a cached one included)

  size_t count(FaultKind kind) const;
  size_t count_image_faults() const;  // faults of kinds that quarantine their image
};

struct ScanOptions {
  int nc = 0;
  bool single_cls = false;
  unsigned threads = 0;  // 0: usable_cores()
  bool use_cache = true;
  // Called on the calling thread about ten times a second while images are checked: (done, total).
  std::function<void(size_t, size_t)> progress;
};

// Scans the images that the sources name (folders, list files, image files, pack splits, as build_index
// takes them; an image named by several sources is scanned once) and their label files:
// - images: unreadable, zero bytes, truncated (JPEG without EOI, PNG without IEND), corrupt (decoding fails
//   or the decoder warns), tiny (a side < 10 px after EXIF orientation), content of another format than the
//   extension says. JPEGs are decoded at 1/8 scale: libjpeg still entropy-decodes every block, so corrupt
//   or missing data is found, at a fraction of a full-size decode's cost.
// - labels: every fault parse_label_text reports, with its line; an unreadable label file.
// - label files in the mirrored label folders that no image uses (find_orphan_labels).
// Throws std::runtime_error when a source does not exist.
ScanReport scan_dataset(const std::vector<std::string>& sources, const ScanOptions& options);

// The report as JSON (the cache file and `kestrel scan`'s report use the same form), and back.
std::string scan_report_to_json(const ScanReport& report);
bool scan_report_from_json(const std::string& json, ScanReport* report);

}  // namespace kestrel
