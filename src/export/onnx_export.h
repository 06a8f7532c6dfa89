// The fused inference network as an ONNX graph, the one each family's exporter writes (opset 12,
// fixed shape): input "images" float32 [1, ch, h, w] (RGB, 0..1); output "output0" decoded as
// DetectionModelImpl::decode does: YOLOv5's float32 [1, N, nc+5] (xywh in input pixels, sigmoid
// objectness and class scores, rows ordered level, anchor, gy, gx), Ultralytics' [1, 4+nc, N] (xywh,
// sigmoid class scores; columns ordered level, gy, gx); metadata 'stride' and 'names' as both set them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/detection_model.h"

namespace kestrel {

struct OnnxExport {
  std::string bytes;                  // the ModelProto
  std::vector<int64_t> input_shape;   // [1, ch, h, w]
  std::vector<int64_t> output_shape;  // [1, N, no] or, anchor-free, [1, 4 + nc, N]
  size_t nodes = 0;
};

// `model`: fused (load_inference_model), eval mode. img_h and img_w must be multiples of the
// largest stride. Throws std::invalid_argument for a layer the graph cannot express.
OnnxExport export_onnx(DetectionModelImpl& model, int img_h, int img_w);

// YOLOv5's metadata value for the names: Python's str() of {0: 'person', 1: 'bicycle'}.
std::string python_names_dict(const std::vector<std::string>& names);

}  // namespace kestrel
