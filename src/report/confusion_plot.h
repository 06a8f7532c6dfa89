// confusion_matrix.png as YOLOv5 draws it: (classes + background) squared, each column (a true
// class) normalised to sum 1, shades of blue with the value in each cell (up to 30 classes), class
// names on both axes, and a colour bar for the scale. Cells under 0.005 are left blank.
#pragma once
#include <string>
#include <vector>

namespace kestrel {

// matrix: (nc+1) x (nc+1) counts, row-major, [predicted][true]; the last row/column is background.
void write_confusion_plot(const std::vector<double>& matrix, int nc, const std::vector<std::string>& names,
                          const std::string& path);

}  // namespace kestrel
