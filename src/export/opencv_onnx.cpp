// OpenCV dnn as the ONNX consumer: readNetFromONNX, one blob in, the graph's output out.
#include "export/opencv_onnx.h"

#include <opencv2/dnn.hpp>
#include <stdexcept>

namespace kestrel {

struct OpenCvOnnxModel::Net {
  cv::dnn::Net net;
};

OpenCvOnnxModel::OpenCvOnnxModel(const std::string& path) : net_(std::make_unique<Net>()) {
  try {
    net_->net = cv::dnn::readNetFromONNX(path);
  } catch (const cv::Exception& e) {
    throw std::runtime_error(path + ": OpenCV " CV_VERSION " dnn cannot read it: " + e.what());
  }
  if (net_->net.empty()) throw std::runtime_error(path + ": OpenCV " CV_VERSION " dnn read no network from it");
  net_->net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
  net_->net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
}

OpenCvOnnxModel::~OpenCvOnnxModel() = default;

std::string OpenCvOnnxModel::opencv_version() { return CV_VERSION; }

torch::Tensor OpenCvOnnxModel::forward(const torch::Tensor& images) {
  torch::Tensor in = images.to(torch::kCPU, torch::kFloat).contiguous();
  std::vector<int> shape(in.sizes().begin(), in.sizes().end());
  const cv::Mat blob(static_cast<int>(shape.size()), shape.data(), CV_32F, in.data_ptr<float>());
  net_->net.setInput(blob);
  const cv::Mat out = net_->net.forward();
  std::vector<int64_t> dims(out.size.p, out.size.p + out.dims);
  return torch::from_blob(const_cast<float*>(out.ptr<float>()), dims, torch::kFloat).clone();
}

double largest_relative_difference(const torch::Tensor& a, const torch::Tensor& b) {
  TORCH_CHECK(a.sizes() == b.sizes(), "shapes differ: ", a.sizes(), " vs ", b.sizes());
  const torch::Tensor bf = b.to(torch::kFloat);
  return ((a.to(torch::kFloat) - bf).abs() / (bf.abs() + 1)).max().item<double>();
}

}  // namespace kestrel
