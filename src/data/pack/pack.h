// `kestrel pack`: packs a dataset's images and labels into one LMDB file (layout in pack_format.h), checks
// a pack, and unpacks it back to folders. Reading a pack during training is pack_reader.h's business.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "data/index/scan.h"

namespace kestrel {

struct PackOptions {
  std::string data_yaml;
  std::string out;        // the pack file to write (conventionally *.kpack)
  int max_side = 0;       // > 0: an image whose long side is longer is re-encoded at this long side
  int jpeg_quality = 95;  // for re-encoded JPEGs (cv2.imwrite's default)
  unsigned threads = 0;   // 0: usable_cores()
  // Called on the calling thread as files are stored: (done, total).
  std::function<void(size_t, size_t)> progress;
  ScanOptions scan;       // the scan whose verdicts go into the pack (nc is taken from the data.yaml)
};

struct PackSummary {
  std::vector<std::pair<std::string, size_t>> splits;  // split -> images
  size_t images = 0, labels = 0, orphan_labels = 0, reencoded = 0;
  std::vector<std::string> unreadable;  // files that could not be read (missing...): not packed
  uint64_t source_bytes = 0;  // the files as read
  uint64_t pack_bytes = 0;    // the pack file
  std::string yaml_path;      // the data.yaml written beside the pack
  ScanReport scan;
  double seconds = 0;
};

// Stores every image of every split (train, val and test when given) once, under its path relative to the
// dataset root (images outside it under "external/<absolute path>"), its label file under the path
// label_path_for_image gives inside the pack, and the label files without images found beside them, so that
// unpacking rebuilds the images/ and labels/ folders. A file that cannot be read (a list file may name a
// missing image) is left out, of the split lists too; the scan report records why. Bytes are stored as
// read, except with max_side: JPEG,
// PNG, WebP and BMP images whose long side exceeds it are decoded (EXIF applied), resized (INTER_AREA, sizes
// truncated as YOLOv5's load_image does) and re-encoded in their own format. Each file gets a
// content_hash64 checksum. The meta database gets the class names, the split lists and the scan report.
// The pack is written to a temporary file and renamed over `out`; then "<out>.yaml", a data.yaml reading
// the splits from the pack, is written beside it. Throws std::runtime_error (a source is already a pack, a
// path too long for an LMDB key, a write error).
PackSummary pack_dataset(const PackOptions& options);

}  // namespace kestrel
