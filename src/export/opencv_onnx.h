// Running an exported ONNX model through OpenCV's dnn module, a consumer Kestrel did not write: the
// check that export's file is read by others as Kestrel means it.
#pragma once
#include <torch/torch.h>

#include <memory>
#include <string>

namespace kestrel {

class OpenCvOnnxModel {
 public:
  // Throws std::runtime_error naming the file when OpenCV cannot read it.
  explicit OpenCvOnnxModel(const std::string& path);
  ~OpenCvOnnxModel();
  // images: float32 [1, ch, h, w] on the CPU, as the model was exported; returns its output tensor.
  torch::Tensor forward(const torch::Tensor& images);
  static std::string opencv_version();  // "4.6.0"

 private:
  struct Net;  // cv::dnn::Net, kept out of this header
  std::unique_ptr<Net> net_;
};

// Largest |a - b| / (1 + |b|) over two tensors of one shape: a difference that reads the same for
// pixel coordinates and for scores.
double largest_relative_difference(const torch::Tensor& a, const torch::Tensor& b);

}  // namespace kestrel
