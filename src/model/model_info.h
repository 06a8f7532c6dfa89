// Model statistics as YOLOv5 and Ultralytics report them: the parse_model layer table, parameter and
// gradient counts, the "layers" count, and thop-rule GFLOPs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/detection_model.h"

namespace kestrel {

struct ModelSummary {
  std::string name;  // yaml file stem with yolov5 -> YOLOv5 (Ultralytics: yolo -> YOLO), e.g. "YOLOv5n"
  int64_t layers = 0;      // python_module_count()
  int64_t parameters = 0;
  int64_t gradients = 0;   // parameters that require grad
  double gflops = 0.0;     // at imgsz x imgsz
  bool thousands = false;  // Ultralytics prints counts with thousands separators
  // "YOLOv5n summary: 214 layers, 1872157 parameters, 1872157 gradients, 4.6 GFLOPs"
  // "YOLO11n summary: 181 layers, 2,624,080 parameters, 2,624,064 gradients, 6.7 GFLOPs"
  std::string line() const;
};

// model_info(): YOLOv5 counts GFLOPs on a max(stride, 32) square input and scales them to imgsz;
// Ultralytics counts them at imgsz.
ModelSummary model_summary(const DetectionModelImpl& model, int64_t imgsz = 640);

// Per layer (index order, Detect last): GFLOPs at imgsz by the rules of each family's thop (Conv2d
// out_numel*in_c/groups*kh*kw, BatchNorm2d 4*numel; YOLOv5's: nearest Upsample out_numel;
// Ultralytics': matrix products out_numel*inner, the DFL conv, Upsample 0; else 0; x2/1e9).
std::vector<double> layer_gflops(const DetectionModelImpl& model, int64_t imgsz = 640);
// Per layer: number of parameters.
std::vector<int64_t> layer_params(const DetectionModelImpl& model);
// The summary's layer count for the Python model. YOLOv5: len(list(model.modules())), every module
// once; Ultralytics: its leaf modules. Both count the SiLU shared by all Convs once and one
// Identity per Conv without activation.
int64_t python_module_count(const DetectionModelImpl& model);
// parse_model's log: a header, then "index from n params module arguments" per layer.
std::string layer_table(const DetectionModelImpl& model);

}  // namespace kestrel
