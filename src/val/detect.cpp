// detect.py's inference path on one image, its txt lines and its annotated image.
#include "val/detect.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <opencv2/imgproc.hpp>

#include "data/augment/letterbox.h"
#include "device/batch_upload.h"
#include "eval/boxes.h"
#include "eval/nms.h"
#include "report/plot_canvas.h"

namespace kestrel {

namespace {
double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

std::string class_name(int cls, const std::vector<std::string>& names) {
  return cls >= 0 && cls < static_cast<int>(names.size()) ? names[cls] : "class" + std::to_string(cls);
}
}  // namespace

int check_img_size(int size, int stride, const char* side) {
  const int fixed = std::max((size + stride - 1) / stride * stride, stride);
  if (fixed != size)
    std::cerr << "WARNING: --imgsz " << side << " " << size << " must be a multiple of max stride " << stride
              << ", updating to " << fixed << "\n";
  return fixed;
}

torch::Tensor image_to_input(const cv::Mat& image, int img_h, int img_w, bool auto_pad, int stride,
                             const torch::Device& device) {
  cv::Mat boxed;
  letterbox(image, img_h, img_w, auto_pad, /*scaleup=*/true, boxed, nullptr, stride);
  Batch batch;  // one image as the loader would hand it over: RGB NCHW uint8
  batch.n = 1;
  batch.h = boxed.rows;
  batch.w = boxed.cols;
  batch.pixels.resize(static_cast<size_t>(3) * boxed.rows * boxed.cols);
  std::vector<cv::Mat> rgb_planes;  // views into the batch buffer
  for (int c = 0; c < 3; ++c)
    rgb_planes.emplace_back(boxed.rows, boxed.cols, CV_8UC1, batch.pixels.data() + static_cast<size_t>(c) * boxed.rows * boxed.cols);
  const int bgr_to_rgb[] = {2, 0, 1, 1, 0, 2};
  cv::mixChannels(std::vector<cv::Mat>{boxed}, rgb_planes, bgr_to_rgb, 3);
  return upload_now(batch, device).images;
}

NmsOptions detect_nms_options(const DetectOptions& options, bool anchor_free) {
  NmsOptions nms = predict_nms_options(anchor_free);
  nms.conf_thres = options.conf_thres;
  nms.iou_thres = options.iou_thres.value_or(nms.iou_thres);
  nms.max_det = options.max_det.value_or(nms.max_det);
  nms.classes = options.classes;
  nms.agnostic = options.agnostic;
  return nms;
}

torch::Tensor detections_from_output(const torch::Tensor& decoded, const NmsOptions& nms, int input_h, int input_w,
                                     int image_h, int image_w, bool ultralytics) {
  torch::Tensor det = non_max_suppression(decoded.to(torch::kFloat32), nms)[0].to(torch::kCPU);
  if (det.size(0)) {
    scale_boxes(det, input_h, input_w, image_h, image_w, ultralytics);
    if (!ultralytics) det.slice(1, 0, 4).round_();  // detect.py's whole pixels; Ultralytics' Results keep fractions
  }
  return det;
}

Detections detect_image(DetectionModelImpl& model, const cv::Mat& image, const DetectOptions& options,
                        const torch::Device& device) {
  Detections out;
  auto t0 = std::chrono::steady_clock::now();
  const int stride = static_cast<int>(model.stride().empty() ? 32 : model.stride().back());
  const torch::Tensor input = image_to_input(image, options.img_h, options.img_w, /*auto_pad=*/true, stride, device);
  out.input_h = static_cast<int>(input.size(2));
  out.input_w = static_cast<int>(input.size(3));
  out.ms_pre = ms_since(t0);

  torch::NoGradGuard no_grad;
  t0 = std::chrono::steady_clock::now();
  torch::Tensor decoded;
  {
    Autocast autocast(options.precision, device);
    decoded = model.decode(model.forward(input));
  }
  out.ms_inference = ms_since(t0);

  t0 = std::chrono::steady_clock::now();
  out.boxes = detections_from_output(decoded, detect_nms_options(options, model.anchor_free()), out.input_h, out.input_w,
                                     image.rows, image.cols, model.config().ultralytics);
  out.ms_nms = ms_since(t0);
  return out;
}

std::string detections_to_yolo_txt(const torch::Tensor& boxes, int image_h, int image_w, bool save_conf, bool reversed) {
  std::string text;
  if (!boxes.defined() || boxes.size(0) == 0) return text;
  const torch::Tensor gain = torch::tensor({image_w, image_h, image_w, image_h}, torch::kFloat32);
  const torch::Tensor xywh = xyxy2xywh(boxes.slice(1, 0, 4).contiguous()) / gain;  // float32, as YOLOv5
  const auto b = boxes.accessor<float, 2>();
  const auto n = xywh.accessor<float, 2>();
  char buf[160];
  for (int64_t k = 0; k < boxes.size(0); ++k) {
    const int64_t i = reversed ? boxes.size(0) - 1 - k : k;
    int len = std::snprintf(buf, sizeof buf, "%g %g %g %g %g", static_cast<double>(b[i][5]), static_cast<double>(n[i][0]),
                            static_cast<double>(n[i][1]), static_cast<double>(n[i][2]), static_cast<double>(n[i][3]));
    if (save_conf) len += std::snprintf(buf + len, sizeof buf - len, " %g", static_cast<double>(b[i][4]));
    text.append(buf, len).push_back('\n');
  }
  return text;
}

std::string summarize_detections(const torch::Tensor& boxes, const std::vector<std::string>& names) {
  if (!boxes.defined() || boxes.size(0) == 0) return "(no detections), ";
  std::map<int, int> counts;
  for (int64_t i = 0; i < boxes.size(0); ++i) ++counts[static_cast<int>(boxes[i][5].item<float>())];
  std::string s;
  for (const auto& [cls, n] : counts) s += std::to_string(n) + " " + class_name(cls, names) + (n > 1 ? "s" : "") + ", ";
  return s;
}

cv::Mat crop_box(const cv::Mat& image, float x1, float y1, float x2, float y2) {
  // float32 as save_one_box's tensor: centre and size, size * 1.02 + 10, back to corners, .long()
  const float cx = (x1 + x2) / 2, cy = (y1 + y2) / 2, w = (x2 - x1) * 1.02f + 10, h = (y2 - y1) * 1.02f + 10;
  const auto clip = [](float v, int hi) { return std::clamp(static_cast<int>(v), 0, hi); };  // .long() truncates
  const int a = clip(cx - w / 2, image.cols), b = clip(cy - h / 2, image.rows);
  const int c = clip(cx + w / 2, image.cols), d = clip(cy + h / 2, image.rows);
  if (c <= a || d <= b) return {};
  return image(cv::Rect(a, b, c - a, d - b));
}

void draw_detections(cv::Mat& image, const torch::Tensor& boxes, const std::vector<std::string>& names, int line_width,
                     bool hide_labels, bool hide_conf) {
  if (!boxes.defined()) return;
  // YOLOv5's default thickness: about 0.3% of the mean side, at least 2 px.
  const int lw = line_width > 0 ? line_width : std::max(static_cast<int>(std::lround((image.rows + image.cols + image.channels()) / 2.0 * 0.003)), 2);
  const int font_thickness = std::max(lw - 1, 1);
  const double font_scale = lw / 3.0;
  const auto b = boxes.accessor<float, 2>();
  for (int64_t i = boxes.size(0) - 1; i >= 0; --i) {  // highest confidence drawn last, on top
    const int cls = static_cast<int>(b[i][5]);
    const cv::Scalar colour = class_colour(cls);
    const cv::Point p1(static_cast<int>(b[i][0]), static_cast<int>(b[i][1])), p2(static_cast<int>(b[i][2]), static_cast<int>(b[i][3]));
    cv::rectangle(image, p1, p2, colour, lw, cv::LINE_AA);
    if (hide_labels) continue;
    char conf[16];
    std::snprintf(conf, sizeof conf, " %.2f", static_cast<double>(b[i][4]));
    const std::string label = class_name(cls, names) + (hide_conf ? "" : conf);
    int baseline = 0;
    const cv::Size ts = cv::getTextSize(label, cv::FONT_HERSHEY_SIMPLEX, font_scale, font_thickness, &baseline);
    const bool above = p1.y - ts.height - 3 >= 0;  // label above the box when it fits, else inside
    const cv::Point q1(p1.x, above ? p1.y - ts.height - 3 : p1.y), q2(p1.x + ts.width, above ? p1.y : p1.y + ts.height + 3);
    cv::rectangle(image, q1, q2, colour, cv::FILLED, cv::LINE_AA);
    cv::putText(image, label, cv::Point(p1.x, above ? p1.y - 2 : p1.y + ts.height + 2), cv::FONT_HERSHEY_SIMPLEX,
                font_scale, cv::Scalar(255, 255, 255), font_thickness, cv::LINE_AA);
  }
}

}  // namespace kestrel
