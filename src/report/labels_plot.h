// labels.jpg, YOLOv5's plot_labels in four panels: instances per class, the label boxes drawn to
// scale around one centre (what shapes the data holds), and 2-D histograms of the box centres (x, y)
// and sizes (width, height), all as fractions of the image. A user sees class imbalance, objects
// that only sit in one corner, or boxes far smaller than the anchors before training starts.
#pragma once
#include <string>
#include <vector>

#include "data/types.h"

namespace kestrel {

void write_labels_plot(const std::vector<Label>& labels, const std::vector<std::string>& names,
                       const std::string& path);

}  // namespace kestrel
