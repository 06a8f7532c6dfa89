// Index summary line.
#include "data/index/index_report.h"

namespace kestrel {

std::string format_index_stats(const IndexStats& s) {
  std::string out = std::to_string(s.images) + " images, " + std::to_string(s.labelled) + " labelled (" +
                    std::to_string(s.instances) + " instances), " + std::to_string(s.backgrounds) + " backgrounds, " +
                    std::to_string(s.corrupt_images) + " corrupt";
  if (s.bad_label_lines) out += ", " + std::to_string(s.bad_label_lines) + " bad label lines skipped";
  if (s.duplicate_labels) out += ", " + std::to_string(s.duplicate_labels) + " duplicate labels removed";
  if (s.orphan_label_files) out += ", " + std::to_string(s.orphan_label_files) + " label files without images";
  return out;
}

}  // namespace kestrel
