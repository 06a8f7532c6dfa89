// The anchor-free DFL head (see dfl_detect.h): branches built in Ultralytics' order (all box
// branches, then all class branches, then DFL), decoding by dist2bbox around cell centres.
#include "model/dfl_detect.h"

#include <cmath>
#include <numeric>

namespace kestrel {

namespace {

ConvArgs conv(int64_t c1, int64_t c2, int64_t k, int64_t g = 1) {
  ConvArgs a{c1, c2, k, 1};
  a.g = g;
  return a;
}

// Ultralytics' DWConv: a Conv grouped by gcd(c1, c2) (depthwise when c1 == c2).
Conv dwconv(int64_t c1, int64_t c2, int64_t k) { return Conv(conv(c1, c2, k, std::gcd(c1, c2))); }

}  // namespace

DflImpl::DflImpl(int64_t bins) : reg_max(bins) {
  conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(reg_max, 1, 1).bias(false)));
  torch::NoGradGuard no_grad;
  conv->weight.copy_(torch::arange(reg_max, torch::kFloat).view({1, reg_max, 1, 1}));
  conv->weight.set_requires_grad(false);
}

torch::Tensor DflImpl::forward(const torch::Tensor& bins) const {
  const int64_t b = bins.size(0), n = bins.size(2);
  return torch::conv2d(bins.reshape({b, 4, reg_max, n}).transpose(2, 1).softmax(1), conv->weight).view({b, 4, n});
}

DflDetectImpl::DflDetectImpl(const DflDetectArgs& a) : reg_max(a.reg_max) {
  nc = a.nc, no = a.nc + 4 * a.reg_max, nl = static_cast<int64_t>(a.ch.size());
  const int64_t c2 = std::max({int64_t{16}, a.ch[0] / 4, 4 * reg_max});
  const int64_t c3 = std::max(a.ch[0], std::min<int64_t>(nc, 100));
  const auto conv2d = [](int64_t c_in, int64_t c_out) { return torch::nn::Conv2d(torch::nn::Conv2dOptions(c_in, c_out, 1)); };
  cv2 = register_module("cv2", torch::nn::ModuleList());
  for (int64_t x : a.ch) {
    Chain box;
    box->append(Conv(conv(x, c2, 3)));
    box->append(Conv(conv(c2, c2, 3)));
    box_outputs.push_back(conv2d(c2, 4 * reg_max));
    box->append(box_outputs.back());
    box_branches.push_back(box);
    cv2->push_back(box);
  }
  cv3 = register_module("cv3", torch::nn::ModuleList());
  for (int64_t x : a.ch) {
    Chain cls;
    if (a.legacy) {
      cls->append(Conv(conv(x, c3, 3)));
      cls->append(Conv(conv(c3, c3, 3)));
    } else {  // YOLO11: two depthwise-separable steps
      for (const auto& [c_in, c_out] : {std::pair{x, c3}, std::pair{c3, c3}}) {
        Chain step;
        step->append(dwconv(c_in, c_in, 3));
        step->append(Conv(conv(c_in, c_out, 1)));
        cls->append(step);
      }
    }
    class_outputs.push_back(conv2d(c3, nc));
    cls->append(class_outputs.back());
    class_branches.push_back(cls);
    cv3->push_back(cls);
  }
  dfl = register_module("dfl", Dfl(reg_max));
}

std::vector<torch::nn::Conv2d> DflDetectImpl::output_convs() const {
  std::vector<torch::nn::Conv2d> out = box_outputs;
  out.insert(out.end(), class_outputs.begin(), class_outputs.end());
  return out;
}

std::vector<torch::Tensor> DflDetectImpl::forward(torch::ArrayRef<torch::Tensor> inputs) {
  std::vector<torch::Tensor> out;
  out.reserve(nl);
  for (int64_t i = 0; i < nl; ++i)  // fp32 out, also under autocast, as YOLOv5's head
    out.push_back(torch::cat({box_branches[i]->forward(inputs[i]), class_branches[i]->forward(inputs[i])}, 1).to(torch::kFloat));
  return out;
}

torch::Tensor DflDetectImpl::decode(const std::vector<torch::Tensor>& raw) const {
  TORCH_CHECK(strides_.size() == static_cast<size_t>(nl), "Detect: strides not set");
  TORCH_CHECK(raw.size() == static_cast<size_t>(nl), "Detect: expected ", nl, " levels, got ", raw.size());
  const int64_t bs = raw[0].size(0);
  std::vector<torch::Tensor> flat, centres, strides;
  for (int64_t i = 0; i < nl; ++i) {
    const torch::Tensor& p = raw[i];
    const int64_t ny = p.size(2), nx = p.size(3);
    const auto opts = p.options();
    flat.push_back(p.reshape({bs, no, ny * nx}));
    const torch::Tensor sy = (torch::arange(ny, opts) + 0.5).view({ny, 1}).expand({ny, nx});
    const torch::Tensor sx = (torch::arange(nx, opts) + 0.5).view({1, nx}).expand({ny, nx});
    centres.push_back(torch::stack({sx, sy}, 0).reshape({2, ny * nx}));
    strides.push_back(torch::full({1, ny * nx}, strides_[i], opts));
  }
  const torch::Tensor x = torch::cat(flat, 2), centre = torch::cat(centres, 1).unsqueeze(0);
  const torch::Tensor dist = dfl->forward(x.slice(1, 0, 4 * reg_max));  // [bs, 4, N]: left, top, right, bottom
  const torch::Tensor lt = dist.slice(1, 0, 2), rb = dist.slice(1, 2, 4);
  const torch::Tensor x1y1 = centre - lt, x2y2 = centre + rb;
  const torch::Tensor xywh = torch::cat({(x1y1 + x2y2) / 2, x2y2 - x1y1}, 1) * torch::cat(strides, 1).unsqueeze(0);
  return torch::cat({xywh, x.slice(1, 4 * reg_max).sigmoid()}, 1).transpose(1, 2);
}

void DflDetectImpl::set_strides(const std::vector<double>& strides) {
  TORCH_CHECK(strides.size() == static_cast<size_t>(nl), "Detect: one stride per level expected");
  strides_ = strides;
}

void DflDetectImpl::initialize_biases() {
  TORCH_CHECK(strides_.size() == static_cast<size_t>(nl), "Detect: strides not set");
  torch::NoGradGuard no_grad;
  for (int64_t i = 0; i < nl; ++i) {
    box_outputs[i]->bias.fill_(2.0);
    const double cells = 640.0 / strides_[i];
    class_outputs[i]->bias.fill_(std::log(5.0 / static_cast<double>(nc) / (cells * cells)));
  }
}

}  // namespace kestrel
