// The kinds of dataset fault that `kestrel scan` reports and the label parser emits, with their
// stable names (used in JSON reports) and whether a fault keeps its image out of a cleaned list.
#pragma once
#include <string>

namespace kestrel {

enum class FaultKind {
  // image files
  unreadable_image,  // missing, not a regular file, or a read error
  zero_byte_image,
  truncated_image,   // the format's end marker is missing (JPEG EOI, PNG IEND)
  corrupt_image,     // the decoder failed or warned (libjpeg warnings count)
  tiny_image,        // a side < 10 px (YOLOv5's limit)
  wrong_extension,   // the content is another format than the extension says (still decodes)
  unreadable_label,  // the image's label file exists but cannot be read (the index drops the image)
  // label lines
  label_columns,               // wrong column count
  label_not_a_number,          // a token that is not a finite number
  label_class_not_integer,
  label_class_out_of_range,    // negative, or >= nc
  label_coordinate_out_of_range,  // x, y, w or h outside [0, 1]
  label_nonpositive_size,      // w or h <= 0
  label_duplicate_line,        // the same row as an earlier line
  // label folders
  label_without_image,
};
constexpr int kFaultKindCount = static_cast<int>(FaultKind::label_without_image) + 1;

struct FaultKindInfo {
  const char* name;          // snake_case, stable: JSON reports and caches use it
  const char* title;         // for the summary table
  bool quarantines_image;    // the image is left out of `scan --fix`'s cleaned list
};

const FaultKindInfo& fault_kind_info(FaultKind kind);
// Inverse of fault_kind_info(kind).name; false for an unknown name.
bool fault_kind_from_name(const std::string& name, FaultKind* kind);

}  // namespace kestrel
