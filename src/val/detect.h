// Inference on single images as YOLOv5's detect.py does it: letterbox with minimal (stride-multiple)
// padding, one forward, NMS with detect.py's defaults (conf 0.25, IoU 0.45, best class only, 1000
// detections; Ultralytics' IoU 0.7 and 300 for its models), boxes mapped back to the original image
// (rounded to whole pixels as detect.py; as Ultralytics' predictor for its models). Plus the two outputs
// detect.py writes: YOLO txt lines and an annotated image.
#pragma once
#include <torch/torch.h>

#include <opencv2/core.hpp>
#include <optional>
#include <string>
#include <vector>

#include "eval/nms.h"
#include "model/detection_model.h"
#include "model/precision.h"

namespace kestrel {

struct DetectOptions {
  int img_h = 640, img_w = 640;  // --imgsz H W: the shape the image is fitted into (stride multiples)
  double conf_thres = 0.25;
  std::optional<double> iou_thres;  // unset: the model family's (predict_nms_options)
  std::optional<int> max_det;       // likewise
  std::vector<int> classes;  // keep only these classes; empty keeps all
  bool agnostic = false;     // class-agnostic NMS
  Precision precision = Precision::fp32;  // forward under autocast unless fp32
};

struct Detections {
  torch::Tensor boxes;   // float32 [k,6] on the CPU: x1, y1, x2, y2 (original pixels), conf, cls
  int input_h = 0, input_w = 0;  // the letterboxed network input size
  double ms_pre = 0, ms_inference = 0, ms_nms = 0;
};

// check_img_size: `size` up to a multiple of the model's largest stride, with a warning naming the
// `side` (height, width) when it changes.
int check_img_size(int size, int stride, const char* side);

// detect.py's network input for one BGR image: letterboxed into img_h x img_w (auto_pad: padded only
// to stride multiples, as for a PyTorch model; off: exactly img_h x img_w, as for a fixed-shape
// export), RGB float32 [1, 3, H, W] in 0..1 on `device`.
torch::Tensor image_to_input(const cv::Mat& image, int img_h, int img_w, bool auto_pad, int stride,
                             const torch::Device& device);
// The NMS settings of `options` over the head family's defaults (predict_nms_options).
NmsOptions detect_nms_options(const DetectOptions& options, bool anchor_free);
// NMS on a decoded output [1, N, no], boxes mapped back from the input's to the image's pixels (as
// detect.py, rounded; as Ultralytics' predictor with `ultralytics`): float32 [k, 6] on the CPU.
torch::Tensor detections_from_output(const torch::Tensor& decoded, const NmsOptions& nms, int input_h, int input_w,
                                     int image_h, int image_w, bool ultralytics = false);

// `image`: BGR uint8 as decode_image gives it. The model should be in eval mode (fused for speed).
Detections detect_image(DetectionModelImpl& model, const cv::Mat& image, const DetectOptions& options,
                        const torch::Device& device);

// The --save-txt file content: one "cls cx cy w h[ conf]" line per detection, normalised by the
// original image size, numbers as Python's "%g", lowest confidence first as detect.py walks
// reversed(det), or highest first as val.py's save_one_txt (reversed = false). Empty when there are
// no detections.
std::string detections_to_yolo_txt(const torch::Tensor& boxes, int image_h, int image_w, bool save_conf,
                                   bool reversed = true);

// detect.py's per-image summary: "2 persons, 1 bus, " (classes in ascending order), or
// "(no detections), ".
std::string summarize_detections(const torch::Tensor& boxes, const std::vector<std::string>& names);

// --save-crop's picture of one box, as save_one_box: the box grown by 2% plus 10 px a side, cut to
// whole pixels and to the image (a view into `image`; empty when nothing of it is inside).
cv::Mat crop_box(const cv::Mat& image, float x1, float y1, float x2, float y2);

// Draws boxes with "name conf" labels. line_width 0 picks YOLOv5's default from the image size.
void draw_detections(cv::Mat& image, const torch::Tensor& boxes, const std::vector<std::string>& names,
                     int line_width = 0, bool hide_labels = false, bool hide_conf = false);

}  // namespace kestrel
