// The dataset index: which images a dataset has, their sizes, and their parsed YOLO labels.
// Follows YOLOv5's LoadImagesAndLabels file discovery and verify_image_label checks, with one deliberate
// difference: a bad label line is skipped (with a warning naming file:line) instead of rejecting the image.
#pragma once
#include <string>
#include <vector>

#include "data/types.h"

namespace kestrel {

struct IndexStats {
  size_t images = 0;       // usable images (records)
  size_t labelled = 0;     // records with at least one label
  size_t backgrounds = 0;  // records without labels (no label file, an empty one, or only bad lines)
  size_t instances = 0;    // labels over all records
  size_t corrupt_images = 0;      // skipped: unreadable header, < 10 px, unreadable label file
  size_t bad_label_lines = 0;     // skipped label lines
  size_t duplicate_labels = 0;    // removed duplicate rows
  size_t orphan_label_files = 0;  // *.txt in the label folders with no image
};

struct DatasetIndex {
  std::vector<ImageRecord> records;
  IndexStats stats;
  std::vector<std::string> warnings;
  bool from_cache = false;  // the records came from a valid index cache
  std::string cache_path;   // the cache file read or written ("" when none could be written)
};

// sources: folders (searched recursively), *.txt list files, image files (as in data.yaml), or pack splits
// ("<file>.kpack#<split>", see pack_format.h: their records name files as "<file>.kpack::<relative path>").
// Builds (or reuses a valid cached) index; corrupt images / bad label lines are skipped with a warning
// naming file and line. Throws std::runtime_error when a source does not exist or no image is found.
//
// - Images: extensions bmp dng jpeg jpg mpo png tif tiff webp pfm (any case), sorted by path; the format is
//   read from the content. Hidden files and folders are skipped, as glob does.
// - List files: a line "./x" is relative to the list file's folder (YOLOv5); another relative line is kept as
//   is when it exists from the current directory, else taken relative to the list file's folder.
// - Labels: the image path with its last "/images/" replaced by "/labels/" and the extension by ".txt".
//   Inside a pack the same rule applies to the relative path. Label text is parsed by parse_label_text
//   (label_parse.h): rows "class x y w h" or polygons, bad rows skipped, duplicates removed.
//   single_cls maps every class to 0 (the class < nc check is then not applied).
// - Sizes come from the header, after EXIF orientation (all of 5..8 swap the sides; YOLOv5's exif_size only
//   swaps for 6 and 8, but cv2.imread rotates for all of them).
// - Cache: keyed by a hash of the image paths, their sizes and mtimes, the label files' sizes and mtimes, nc and
//   single_cls. Stored as "<labels folder>.kestrel.cache" when that folder's parent is writable (by its mode
//   bits), else under user_cache_dir()/index/ (always there for packs). Written atomically.
DatasetIndex build_index(const std::vector<std::string>& sources, int nc, bool single_cls = false);

// The sorted image files that the sources name (the first step of build_index).
std::vector<std::string> list_image_files(const std::vector<std::string>& sources);
// YOLOv5 img2label_paths for one image (for a pack path, applied to the path inside the pack).
std::string label_path_for_image(const std::string& image_path);
// Label files (*.txt, searched recursively) in the label folders that mirror folder sources, that none of
// label_paths names: labels without an image. Sorted. List-file sources may pick a subset of a folder on
// purpose, so their folders are not searched; labels kept beside the images are not searched either.
std::vector<std::string> find_orphan_labels(const std::vector<std::string>& sources,
                                            const std::vector<std::string>& label_paths);
// True when the path ends in one of YOLOv5's image extensions (any case).
bool has_image_extension(const std::string& path);

}  // namespace kestrel
