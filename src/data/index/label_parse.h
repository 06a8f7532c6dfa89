// The YOLO label file parser: one place that decides which rows of a label file are usable, used by the
// dataset index (which skips bad rows) and by `kestrel scan` (which reports them).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "data/index/fault_kind.h"
#include "data/types.h"

namespace kestrel {

// A problem with one line of a label file.
struct LabelLineFault {
  FaultKind kind;      // one of the label_* kinds
  size_t line = 0;     // 1-based
  std::string detail;  // what is wrong, for messages ("class 3 exceeds nc=3 ...")
  bool skipped = true; // the row was dropped; false for a zero-size box, which YOLOv5 keeps
};

struct ParsedLabels {
  std::vector<Label> labels;
  std::vector<LabelLineFault> faults;  // in line order; at most one per line
  size_t skipped_lines = 0;            // dropped rows, duplicates not included
  size_t duplicates = 0;               // dropped duplicate rows
};

// Parses label text as YOLOv5's verify_image_label does:
// - Lines split on \n, \r\n or \r; tokens on whitespace; blank lines are ignored silently.
// - Rows are "class x y w h", normalised. If any row has more than 6 columns the whole file is read as
//   polygons (class x1 y1 x2 y2 ...), each row becoming its bounding box (float32 xyxy -> xywh).
// - A row is dropped when a token is not a finite number, the column count is wrong, the class is not a
//   non-negative integer or (unless single_cls) >= nc, w or h is negative, or x, y, w or h lies outside
//   [0, 1]. Checks run in that order; a row gets the first fault found.
// - A zero w or h is reported but kept, as YOLOv5 keeps it (augmentation filters such boxes).
// - Exact duplicate rows (as float32 values) are dropped; when any exist the remaining rows come sorted,
//   as np.unique returns them. The fault names the later line and the earlier one in its detail.
// single_cls maps every class to 0 after the checks.
ParsedLabels parse_label_text(std::string_view text, int nc, bool single_cls);

}  // namespace kestrel
