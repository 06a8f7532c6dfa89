// One-line summary of a dataset index, as YOLOv5's label scan prints it.
#pragma once
#include <string>

#include "data/index/label_index.h"

namespace kestrel {

// "128 images, 126 labelled (929 instances), 2 backgrounds, 0 corrupt, 0 bad label lines"
std::string format_index_stats(const IndexStats& s);

}  // namespace kestrel
