// The building blocks of YOLOv5 (models/common.py, models/yolo.py Detect) as LibTorch modules, with
// the parameters Ultralytics' versions of them take (Bottleneck kernels, SPPF's pools), and the
// interface every detection head implements. Submodule names follow YOLOv5's attribute names so
// state-dict keys match one for one.
#pragma once
#include <torch/torch.h>

#include <functional>
#include <vector>

#include "model/model_config.h"

namespace kestrel {

// A layer of the network's layer list: the model calls `run` with the outputs of the layers its
// `from` names, in order.
class LayerImpl : public torch::nn::Module {
 public:
  virtual torch::Tensor run(torch::ArrayRef<torch::Tensor> inputs) = 0;
};

// A replacement for BatchNorm2d's training-mode forward (distributed/sync_batch_norm.h: statistics over
// every rank of a data-parallel job). Eval mode always uses the module's own running statistics.
using BatchNormForward = std::function<torch::Tensor(torch::nn::BatchNorm2dImpl&, const torch::Tensor&)>;

// Conv2d (no bias) + BatchNorm2d + SiLU, padding k/2. After fuse(): Conv2d with bias + SiLU.
class ConvImpl : public LayerImpl {
 public:
  explicit ConvImpl(const ConvArgs& args);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor run(torch::ArrayRef<torch::Tensor> in) override { return forward(in[0]); }
  // Folds the BatchNorm (running statistics) into the convolution and drops `bn`.
  void fuse();
  bool fused() const { return bn.is_empty(); }
  bool has_act() const { return args_.act; }

  torch::nn::Conv2d conv{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};
  BatchNormForward bn_forward;  // set: used for bn while training (--sync-bn)

 private:
  ConvArgs args_;
};
TORCH_MODULE(Conv);

// cv2(cv1(x)) (k1 x k1, then k2 x k2), plus x when shortcut and c1 == c2.
class BottleneckImpl : public LayerImpl {
 public:
  explicit BottleneckImpl(const BottleneckArgs& args);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor run(torch::ArrayRef<torch::Tensor> in) override { return forward(in[0]); }

  Conv cv1{nullptr}, cv2{nullptr};
  bool adds_input() const { return add_; }  // the residual: its output channels are its input's

 private:
  bool add_;
};
TORCH_MODULE(Bottleneck);

// CSP bottleneck with 3 convolutions: cv3(cat(m(cv1(x)), cv2(x))).
class C3Impl : public LayerImpl {
 public:
  explicit C3Impl(const C3Args& args);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor run(torch::ArrayRef<torch::Tensor> in) override { return forward(in[0]); }

  Conv cv1{nullptr}, cv2{nullptr}, cv3{nullptr};
  torch::nn::ModuleList m{nullptr};  // the Bottlenecks (Python: nn.Sequential)
  std::vector<Bottleneck> bottlenecks;
};
TORCH_MODULE(C3);

// Spatial pyramid pooling, fast: one k x k max-pool applied n (3) times in sequence.
class SPPFImpl : public LayerImpl {
 public:
  explicit SPPFImpl(const SPPFArgs& args);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor run(torch::ArrayRef<torch::Tensor> in) override { return forward(in[0]); }

  Conv cv1{nullptr}, cv2{nullptr};
  torch::nn::MaxPool2d m{nullptr};
  int64_t pools() const { return n_; }        // max-pools in sequence (YOLOv5: 3)
  bool adds_input() const { return add_; }    // Ultralytics' shortcut: + x after cv2

 private:
  int64_t n_;
  bool add_;
};
TORCH_MODULE(SPPF);

// Spatial pyramid pooling: parallel max-pools of several sizes.
class SPPImpl : public LayerImpl {
 public:
  explicit SPPImpl(const SPPArgs& args);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor run(torch::ArrayRef<torch::Tensor> in) override { return forward(in[0]); }

  Conv cv1{nullptr}, cv2{nullptr};
  torch::nn::ModuleList m{nullptr};
  std::vector<torch::nn::MaxPool2d> pools;
};
TORCH_MODULE(SPP);

// Nearest-neighbour upsampling by a scale factor (nn.Upsample(None, s, 'nearest')).
class UpsampleImpl : public LayerImpl {
 public:
  explicit UpsampleImpl(const UpsampleArgs& args) : scale_(args.scale) {}
  torch::Tensor run(torch::ArrayRef<torch::Tensor> in) override;
  double scale() const { return scale_; }

 private:
  double scale_;
};
TORCH_MODULE(Upsample);

// Concatenation of its inputs along one dimension.
class ConcatImpl : public LayerImpl {
 public:
  explicit ConcatImpl(const ConcatArgs& args) : dim_(args.dim) {}
  torch::Tensor run(torch::ArrayRef<torch::Tensor> in) override { return torch::cat(in, dim_); }

 private:
  int64_t dim_;
};
TORCH_MODULE(Concat);

// A layer repeated n times in sequence (Python's nn.Sequential for rows with number > 1 that
// are not C3); children are named 0..n-1.
class RepeatImpl : public LayerImpl {
 public:
  explicit RepeatImpl(std::vector<std::shared_ptr<LayerImpl>> layers);
  torch::Tensor run(torch::ArrayRef<torch::Tensor> in) override;
  const std::vector<std::shared_ptr<LayerImpl>>& layers() const { return layers_; }

 private:
  std::vector<std::shared_ptr<LayerImpl>> layers_;
};
TORCH_MODULE(Repeat);

// Python's nn.Sequential of single-input steps (Conv, Conv2d, or a nested Chain), children named
// 0, 1, ...: LibTorch's Sequential cannot hold a Sequential.
class ChainImpl : public torch::nn::Module {
 public:
  template <typename Holder>
  void append(Holder step) {
    register_module(std::to_string(steps_.size()), step.ptr());
    steps_.push_back([step](const torch::Tensor& x) mutable { return step->forward(x); });
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = x;
    for (auto& step : steps_) y = step(y);
    return y;
  }

 private:
  std::vector<std::function<torch::Tensor(const torch::Tensor&)>> steps_;
};
TORCH_MODULE(Chain);

// A detection head: the last layer, one input feature map per level.
class DetectHeadImpl : public torch::nn::Module {
 public:
  // Raw per-level outputs (logits, fp32), in training and eval mode alike.
  virtual std::vector<torch::Tensor> forward(torch::ArrayRef<torch::Tensor> inputs) = 0;
  // Decoded predictions [bs, N, ...]: xywh in input pixels first (each head says what follows).
  // Needs set_strides() first.
  virtual torch::Tensor decode(const std::vector<torch::Tensor>& raw) const = 0;
  // Called once the strides are known (from the model's probe forward).
  virtual void set_strides(const std::vector<double>& strides) = 0;
  // The bias priors each family starts its head from.
  virtual void initialize_biases() = 0;
  // The biased convolutions that give the head's outputs (their channel counts follow the classes).
  virtual std::vector<torch::nn::Conv2d> output_convs() const = 0;
  const std::vector<double>& strides() const { return strides_; }

  int64_t nc = 0, no = 0, nl = 0;  // classes, outputs per cell (and anchor), levels

 protected:
  std::vector<double> strides_;
};

// YOLOv5's head: one 1x1 conv (with bias) per level giving na*(nc+5) channels.
class DetectImpl : public DetectHeadImpl {
 public:
  explicit DetectImpl(const DetectArgs& args);
  // Raw per-level outputs [bs, na, ny, nx, no] (logits), in training and eval alike.
  std::vector<torch::Tensor> forward(torch::ArrayRef<torch::Tensor> inputs) override;
  // Decoded predictions [bs, N, no]: xywh in input pixels, sigmoid obj and class scores; rows
  // ordered level, anchor, gy, gx.
  torch::Tensor decode(const std::vector<torch::Tensor>& raw) const override;
  // check_anchor_order on the pixel anchors, then anchors to grid units (anchors /= stride).
  void set_strides(const std::vector<double>& strides) override;
  // New anchors in pixels [nl, na, 2] (AutoAnchor): check_anchor_order, then to grid units.
  void set_pixel_anchors(const torch::Tensor& pixels);
  // YOLOv5's _initialize_biases (cf=None): objectness prior of 8 objects per 640 image, class
  // prior 0.6/(nc-0.99).
  void initialize_biases() override;
  std::vector<torch::nn::Conv2d> output_convs() const override { return convs; }

  int64_t na;
  torch::Tensor anchors;  // buffer [nl, na, 2]: pixels until set_strides, then grid units
  torch::nn::ModuleList m{nullptr};
  std::vector<torch::nn::Conv2d> convs;

 private:
  void order_and_scale_anchors();  // check_anchor_order on pixel anchors, then anchors /= stride
};
TORCH_MODULE(Detect);

// Sets a convolution's channel and group counts from its weight after a pruning cut it
// ([out, in / groups, k, k]): each group keeps the outputs it had, so a depthwise one stays depthwise.
void fit_options_to_weight(torch::nn::Conv2dImpl& conv);

// Builds the layer a resolved row describes (all but Detect); repeats > 1 gives a Repeat.
std::shared_ptr<LayerImpl> make_layer(const LayerSpec& spec);
// Builds the Detect row's head: YOLOv5's anchor head or Ultralytics' DFL head.
std::shared_ptr<DetectHeadImpl> make_head(const LayerSpec& spec);

}  // namespace kestrel
