// `kestrel export` as a library call, after export.py: reads a trained model (Kestrel checkpoint or
// YOLOv5 .pt), writes <weights stem>.onnx beside it (atomically), then loads that file with OpenCV
// dnn and compares its output with Kestrel's forward on one input, so a file that others would
// read differently never passes silently.
#pragma once
#include <string>
#include <vector>

namespace kestrel {

struct ExportRunOptions {
  std::string weights, cfg;
  std::vector<std::string> include{"onnx"};  // formats; onnx is the one Kestrel writes
  std::vector<int> imgsz{640};               // h [w], rounded up to stride multiples
};

struct ExportRunSummary {
  std::string file;
  int img_h = 0, img_w = 0;
  double difference = 0;  // largest relative difference, OpenCV dnn vs Kestrel
};

ExportRunSummary run_export(const ExportRunOptions& options);

}  // namespace kestrel
