// Model statistics as YOLOv5 reports them: the parse_model layer table, parameter and gradient
// counts, the "layers" count of len(list(model.modules())), and thop-rule GFLOPs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/detection_model.h"

namespace kestrel {

struct ModelSummary {
  std::string name;  // yaml file stem with yolov5 -> YOLOv5, e.g. "YOLOv5n"
  int64_t layers = 0;      // len(list(model.modules())) of the Python model
  int64_t parameters = 0;
  int64_t gradients = 0;   // parameters that require grad
  double gflops = 0.0;     // at imgsz x imgsz
  // "YOLOv5n summary: 214 layers, 1872157 parameters, 1872157 gradients, 4.6 GFLOPs"
  std::string line() const;
};

// model_info(): GFLOPs are counted on a max(stride, 32) square input and scaled to imgsz.
ModelSummary model_summary(const DetectionModelImpl& model, int64_t imgsz = 640);

// Per layer (index order, Detect last): GFLOPs at imgsz by thop's rules (Conv2d
// out_numel*in_c/groups*kh*kw, BatchNorm2d 4*numel, nearest Upsample out_numel, else 0; x2/1e9).
std::vector<double> layer_gflops(const DetectionModelImpl& model, int64_t imgsz = 640);
// Per layer: number of parameters.
std::vector<int64_t> layer_params(const DetectionModelImpl& model);
// What len(list(model.modules())) gives for the Python model: every module once, the SiLU
// shared by all Convs once, and one Identity per Conv without activation.
int64_t python_module_count(const DetectionModelImpl& model);
// parse_model's log: a header, then "index from n params module arguments" per layer.
std::string layer_table(const DetectionModelImpl& model);

}  // namespace kestrel
