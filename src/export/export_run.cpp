// export.py's flow for ONNX: load, check the image size, export, write, then prove the file with a
// second reader (OpenCV dnn) against Kestrel's own forward.
#include "export/export_run.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "core/atomic_file.h"
#include "export/onnx_export.h"
#include "export/opencv_onnx.h"
#include "model/weights.h"
#include "val/detect.h"

namespace fs = std::filesystem;

namespace kestrel {

namespace {

// The agreement an fp32 graph reaches with a second implementation (OpenCV's convolutions sum in
// another order): a few 1e-5 here; far above it means a graph that computes something else.
constexpr double kAgreement = 1e-3;

std::string megabytes(uintmax_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
}

void check_formats(const std::vector<std::string>& include) {
  for (const auto& f : include)
    if (f != "onnx")
      throw std::invalid_argument("--include " + f + ": Kestrel exports onnx only (LibTorch checkpoints are its own format)");
}

// The largest relative difference between OpenCV dnn's output for the file and Kestrel's decoded
// forward, on one seeded random image.
double compare_with_opencv(DetectionModelImpl& model, const std::string& file, const std::vector<int64_t>& input_shape) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(0);
  const torch::Tensor images = torch::rand(input_shape);
  const torch::Tensor decoded = model.decode(model.forward(images));
  const torch::Tensor ours = model.anchor_free() ? decoded.transpose(1, 2).contiguous() : decoded;  // Ultralytics' layout
  OpenCvOnnxModel theirs(file);
  return largest_relative_difference(theirs.forward(images), ours);
}

}  // namespace

ExportRunSummary run_export(const ExportRunOptions& o) {
  check_formats(o.include);
  if (o.imgsz.empty() || o.imgsz.size() > 2) throw std::invalid_argument("--imgsz takes one size or H W");
  const auto t0 = std::chrono::steady_clock::now();
  DetectionModel model = load_inference_model(o.weights, o.cfg, torch::kCPU);
  const int stride = static_cast<int>(model->stride().back());
  ExportRunSummary s;
  s.img_h = check_img_size(o.imgsz.front(), stride, "height");
  s.img_w = check_img_size(o.imgsz.back(), stride, "width");

  OnnxExport onnx = export_onnx(*model, s.img_h, s.img_w);
  std::cout << "PyTorch: starting from " << o.weights << " with output shape " << shape_text(onnx.output_shape) << " ("
            << megabytes(fs::file_size(o.weights)) << ")\n";
  s.file = fs::path(o.weights).replace_extension(".onnx").string();
  write_file_atomic(s.file, onnx.bytes);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("ONNX: export success %.1fs, saved as %s (%s), opset 12, %zu nodes, input images %s\n", seconds, s.file.c_str(),
              megabytes(onnx.bytes.size()).c_str(), onnx.nodes, shape_text(onnx.input_shape).c_str());

  s.difference = compare_with_opencv(*model, s.file, onnx.input_shape);
  if (s.difference > kAgreement)
    throw std::runtime_error(s.file + ": OpenCV dnn's output differs from Kestrel's by " + std::to_string(s.difference) +
                             " (relative): the exported graph does not compute the model");
  std::printf("ONNX: OpenCV %s dnn reads it; largest difference to Kestrel's output %.1e (relative)\n",
              OpenCvOnnxModel::opencv_version().c_str(), s.difference);
  return s;
}

}  // namespace kestrel
