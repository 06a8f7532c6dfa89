// The four curves of a validation as YOLOv5 draws them: PR_curve.png (precision against recall at
// IoU 0.5, with each class's AP@0.5 and the mean), F1_curve.png, P_curve.png and R_curve.png (against
// the confidence threshold, with the best mean F1 and where it lies). Per-class lines are drawn
// 2 px, with names in the legend, up to 20 classes; the mean over classes is the thick blue line.
#pragma once
#include <string>
#include <vector>

namespace kestrel {

struct ClassCurves {
  std::vector<double> px;  // the 1000-point grid: recall for pr, confidence for p, r, f1
  std::vector<int> classes;                         // class id of each row
  std::vector<std::vector<double>> pr, p, r, f1;   // one row per class
  std::vector<double> ap50;                         // AP@0.5 per row
};

// Writes the four PNGs into `dir`. Nothing is written when there are no classes.
void write_curve_plots(const ClassCurves& curves, const std::vector<std::string>& names, const std::string& dir);

}  // namespace kestrel
