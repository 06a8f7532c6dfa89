// YOLOv5 building blocks: construction (in YOLOv5's submodule order, so default initialisation
// draws the same random stream), forward passes, Conv+BN fusion and the Detect head's decoding;
// the factories of layers and heads of both families.
#include "model/layers.h"

#include "model/dfl_detect.h"
#include "model/ultralytics_blocks.h"

#include <cmath>

namespace kestrel {

namespace {

// Out-of-place while autograd records (SiLU's backward needs its input), in place otherwise.
torch::Tensor activate(torch::Tensor x) {
  return torch::GradMode::is_enabled() ? torch::silu(x) : torch::silu_(x);
}

int64_t autopad(int64_t k, std::optional<int64_t> p, int64_t d) {
  if (p) return *p;
  const int64_t span = d > 1 ? d * (k - 1) + 1 : k;
  return span / 2;
}

}  // namespace

// ---- Conv

ConvImpl::ConvImpl(const ConvArgs& args) : args_(args) {
  conv = register_module(
      "conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(args.c1, args.c2, args.k)
                                    .stride(args.s)
                                    .padding(autopad(args.k, args.p, args.d))
                                    .dilation(args.d)
                                    .groups(args.g)
                                    .bias(false)));
  bn = register_module("bn", torch::nn::BatchNorm2d(args.c2));
}

torch::Tensor ConvImpl::forward(const torch::Tensor& x) {
  torch::Tensor y = conv(x);
  if (!bn.is_empty()) y = bn_forward && is_training() ? bn_forward(*bn, y) : bn(y);
  return args_.act ? activate(y) : y;
}

void ConvImpl::fuse() {
  if (fused()) return;
  torch::NoGradGuard no_grad;
  const auto& o = conv->options;
  const torch::Tensor& w = conv->weight;  // its shape, not the options: a pruned conv has fewer channels
  torch::nn::Conv2d fused_conv(torch::nn::Conv2dOptions(w.size(1) * o.groups(), w.size(0), o.kernel_size())
                                   .stride(o.stride())
                                   .padding(o.padding())
                                   .dilation(o.dilation())
                                   .groups(o.groups())
                                   .bias(true));  // default init like YOLOv5's fresh Conv2d
  fused_conv->to(conv->weight.device(), conv->weight.scalar_type());
  const double eps = bn->options.eps();
  // scale = gamma / sqrt(var + eps); w' = scale * w; b' = beta - gamma * mean / sqrt(var + eps)
  const torch::Tensor scale = bn->weight.div(torch::sqrt(bn->running_var + eps));
  fused_conv->weight.copy_(conv->weight * scale.view({-1, 1, 1, 1}));
  fused_conv->bias.copy_(
      bn->bias - bn->weight.mul(bn->running_mean).div(torch::sqrt(bn->running_var + eps)));
  conv = replace_module("conv", fused_conv);
  unregister_module("bn");
  bn = nullptr;
}

// ---- Bottleneck, C3, SPPF, SPP

BottleneckImpl::BottleneckImpl(const BottleneckArgs& a) {
  const auto c_ = static_cast<int64_t>(static_cast<double>(a.c2) * a.e);
  cv1 = register_module("cv1", Conv(ConvArgs{a.c1, c_, a.k1, 1}));
  ConvArgs second{c_, a.c2, a.k2, 1};
  second.g = a.g;
  cv2 = register_module("cv2", Conv(second));
  add_ = a.shortcut && a.c1 == a.c2;
}

torch::Tensor BottleneckImpl::forward(const torch::Tensor& x) {
  torch::Tensor y = cv2(cv1(x));
  return add_ ? x + y : y;
}

C3Impl::C3Impl(const C3Args& a) {
  const auto c_ = static_cast<int64_t>(static_cast<double>(a.c2) * a.e);
  cv1 = register_module("cv1", Conv(ConvArgs{a.c1, c_, 1, 1}));
  cv2 = register_module("cv2", Conv(ConvArgs{a.c1, c_, 1, 1}));
  cv3 = register_module("cv3", Conv(ConvArgs{2 * c_, a.c2, 1}));
  m = register_module("m", torch::nn::ModuleList());
  for (int64_t i = 0; i < a.n; ++i) {
    bottlenecks.emplace_back(BottleneckArgs{c_, c_, a.shortcut, a.g, 1.0, a.k, 3});
    m->push_back(bottlenecks.back());
  }
}

torch::Tensor C3Impl::forward(const torch::Tensor& x) {
  torch::Tensor y = cv1(x);
  for (auto& b : bottlenecks) y = b(y);
  return cv3(torch::cat({y, cv2(x)}, 1));
}

SPPFImpl::SPPFImpl(const SPPFArgs& a) : n_(a.n), add_(a.shortcut && a.c1 == a.c2) {
  const int64_t c_ = a.c1 / 2;
  ConvArgs first{a.c1, c_, 1, 1};
  first.act = a.cv1_act;
  cv1 = register_module("cv1", Conv(first));
  cv2 = register_module("cv2", Conv(ConvArgs{c_ * (n_ + 1), a.c2, 1, 1}));
  m = register_module("m",
                      torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(a.k).stride(1).padding(a.k / 2)));
}

torch::Tensor SPPFImpl::forward(const torch::Tensor& x) {
  std::vector<torch::Tensor> y{cv1(x)};
  for (int64_t i = 0; i < n_; ++i) y.push_back(m(y.back()));
  torch::Tensor out = cv2(torch::cat(y, 1));
  return add_ ? out + x : out;
}

SPPImpl::SPPImpl(const SPPArgs& a) {
  const int64_t c_ = a.c1 / 2;
  cv1 = register_module("cv1", Conv(ConvArgs{a.c1, c_, 1, 1}));
  cv2 = register_module(
      "cv2", Conv(ConvArgs{c_ * static_cast<int64_t>(a.k.size() + 1), a.c2, 1, 1}));
  m = register_module("m", torch::nn::ModuleList());
  for (int64_t k : a.k) {
    pools.emplace_back(torch::nn::MaxPool2dOptions(k).stride(1).padding(k / 2));
    m->push_back(pools.back());
  }
}

torch::Tensor SPPImpl::forward(const torch::Tensor& x) {
  std::vector<torch::Tensor> parts{cv1(x)};
  for (auto& pool : pools) parts.push_back(pool(parts.front()));
  return cv2(torch::cat(parts, 1));
}

// ---- Upsample, Repeat

torch::Tensor UpsampleImpl::run(torch::ArrayRef<torch::Tensor> in) {
  namespace F = torch::nn::functional;
  return F::interpolate(in[0], F::InterpolateFuncOptions()
                                   .scale_factor(std::vector<double>{scale_, scale_})
                                   .mode(torch::kNearest));
}

RepeatImpl::RepeatImpl(std::vector<std::shared_ptr<LayerImpl>> layers) : layers_(std::move(layers)) {
  for (size_t i = 0; i < layers_.size(); ++i) register_module(std::to_string(i), layers_[i]);
}

torch::Tensor RepeatImpl::run(torch::ArrayRef<torch::Tensor> in) {
  torch::Tensor x = in[0];
  for (auto& layer : layers_) x = layer->run(x);
  return x;
}

// ---- Detect

DetectImpl::DetectImpl(const DetectArgs& a) : na(static_cast<int64_t>(a.anchors.front().size() / 2)) {
  nc = a.nc, no = a.nc + 5, nl = static_cast<int64_t>(a.anchors.size());
  std::vector<float> flat;
  for (const auto& level : a.anchors)
    for (double v : level) flat.push_back(static_cast<float>(v));
  anchors = register_buffer("anchors", torch::tensor(flat).view({nl, na, 2}));
  m = register_module("m", torch::nn::ModuleList());
  for (int64_t c : a.ch) {
    convs.emplace_back(torch::nn::Conv2dOptions(c, no * na, 1));
    m->push_back(convs.back());
  }
}

std::vector<torch::Tensor> DetectImpl::forward(torch::ArrayRef<torch::Tensor> inputs) {
  std::vector<torch::Tensor> out;
  out.reserve(nl);
  for (int64_t i = 0; i < nl; ++i) {
    // fp32 out, also under autocast: decoding and the loss need more than bf16's 8 mantissa bits
    // (a 600 px coordinate would round to 4 px).
    torch::Tensor y = convs[i](inputs[i]).to(torch::kFloat);
    const int64_t bs = y.size(0), ny = y.size(2), nx = y.size(3);
    if (y.is_contiguous(torch::MemoryFormat::ChannelsLast)) {
      // [bs, ny, nx, na, no] is a view of channels-last memory: one copy of runs of `no` floats
      // here, one in backward, and the gradient reaches the conv channels-last as it wants it. The
      // NCHW view below cost two transposing copies per level in backward (13% of a yolov5n step).
      out.push_back(y.permute({0, 2, 3, 1}).view({bs, ny, nx, na, no}).permute({0, 3, 1, 2, 4}).contiguous());
    } else {
      out.push_back(y.view({bs, na, no, ny, nx}).permute({0, 1, 3, 4, 2}).contiguous());
    }
  }
  return out;
}

torch::Tensor DetectImpl::decode(const std::vector<torch::Tensor>& raw) const {
  TORCH_CHECK(strides_.size() == static_cast<size_t>(nl), "Detect: strides not set");
  TORCH_CHECK(raw.size() == static_cast<size_t>(nl), "Detect: expected ", nl, " levels, got ",
              raw.size());
  std::vector<torch::Tensor> levels;
  levels.reserve(nl);
  for (int64_t i = 0; i < nl; ++i) {
    const torch::Tensor& p = raw[i];
    const int64_t bs = p.size(0), ny = p.size(2), nx = p.size(3);
    const auto opts = p.options();
    // grid[.., gy, gx] = (gx, gy) - 0.5, so xy = (2*sig + grid) * stride = (2*sig - 0.5 + g) * stride
    const torch::Tensor gy = torch::arange(ny, opts).view({ny, 1}).expand({ny, nx});
    const torch::Tensor gx = torch::arange(nx, opts).view({1, nx}).expand({ny, nx});
    const torch::Tensor grid = torch::stack({gx, gy}, 2).view({1, 1, ny, nx, 2}) - 0.5;
    const torch::Tensor anchor_grid =
        (anchors[i] * strides_[i]).to(p.scalar_type()).view({1, na, 1, 1, 2});
    const torch::Tensor s = p.sigmoid();
    const torch::Tensor xy = (s.slice(4, 0, 2) * 2 + grid) * strides_[i];
    const torch::Tensor wh = (s.slice(4, 2, 4) * 2).pow(2) * anchor_grid;
    levels.push_back(torch::cat({xy, wh, s.slice(4, 4)}, 4).view({bs, na * ny * nx, no}));
  }
  return torch::cat(levels, 1);
}

void DetectImpl::set_strides(const std::vector<double>& strides) {
  TORCH_CHECK(strides.size() == static_cast<size_t>(nl), "Detect: one stride per level expected");
  strides_ = strides;
  order_and_scale_anchors();
}

void DetectImpl::set_pixel_anchors(const torch::Tensor& pixels) {
  TORCH_CHECK(pixels.sizes() == anchors.sizes(), "Detect: anchors must be [nl, na, 2]");
  torch::NoGradGuard no_grad;
  anchors.copy_(pixels);
  order_and_scale_anchors();
}

void DetectImpl::order_and_scale_anchors() {
  const std::vector<double>& strides = strides_;
  torch::NoGradGuard no_grad;
  // check_anchor_order: anchor area must grow with stride, else flip the levels.
  const torch::Tensor area = anchors.prod(-1).mean(-1).view(-1);
  const double da = (area[-1] - area[0]).item<double>();
  const double ds = strides.back() - strides.front();
  const auto sign = [](double v) { return (v > 0) - (v < 0); };
  if (da != 0 && sign(da) != sign(ds)) anchors.copy_(anchors.flip(0));
  const torch::Tensor s = torch::tensor(std::vector<float>(strides.begin(), strides.end()));
  anchors.div_(s.to(anchors.device()).view({-1, 1, 1}));
}

void DetectImpl::initialize_biases() {
  TORCH_CHECK(strides_.size() == static_cast<size_t>(nl), "Detect: strides not set");
  torch::NoGradGuard no_grad;
  const double cls_prior = std::log(0.6 / (static_cast<double>(nc) - 0.99));
  for (int64_t i = 0; i < nl; ++i) {
    // float32 like the stride tensor YOLOv5 computes with: log(8 / (640 / s)^2)
    const float cells = 640.0f / static_cast<float>(strides_[i]);
    const double obj_prior = std::log(static_cast<double>(8.0f / (cells * cells)));
    torch::Tensor b = convs[i]->bias.view({na, no});
    b.select(1, 4).add_(obj_prior);
    b.slice(1, 5, 5 + nc).add_(cls_prior);
  }
}

// ---- factory

namespace {

std::shared_ptr<LayerImpl> make_one(const LayerSpec& spec) {
  return std::visit(
      [&](const auto& a) -> std::shared_ptr<LayerImpl> {
        using A = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<A, ConvArgs>) return std::make_shared<ConvImpl>(a);
        if constexpr (std::is_same_v<A, BottleneckArgs>) return std::make_shared<BottleneckImpl>(a);
        if constexpr (std::is_same_v<A, C3Args>) return std::make_shared<C3Impl>(a);
        if constexpr (std::is_same_v<A, SPPFArgs>) return std::make_shared<SPPFImpl>(a);
        if constexpr (std::is_same_v<A, SPPArgs>) return std::make_shared<SPPImpl>(a);
        if constexpr (std::is_same_v<A, UpsampleArgs>) return std::make_shared<UpsampleImpl>(a);
        if constexpr (std::is_same_v<A, ConcatArgs>) return std::make_shared<ConcatImpl>(a);
        if constexpr (std::is_same_v<A, C2fArgs>) return std::make_shared<C2fImpl>(a);
        if constexpr (std::is_same_v<A, C2PSAArgs>) return std::make_shared<C2PSAImpl>(a);
        if constexpr (std::is_same_v<A, DetectArgs> || std::is_same_v<A, DflDetectArgs>)
          throw std::runtime_error(spec.where + ": Detect is built by make_head, not make_layer");
      },
      spec.typed);
}

}  // namespace

void fit_options_to_weight(torch::nn::Conv2dImpl& conv) {
  auto& o = conv.options;
  const int64_t out = conv.weight.size(0), groups = o.groups() == 1 ? 1 : out / (o.out_channels() / o.groups());
  o.groups(groups).out_channels(out).in_channels(conv.weight.size(1) * groups);
}

std::shared_ptr<LayerImpl> make_layer(const LayerSpec& spec) {
  if (spec.repeats == 1) return make_one(spec);
  std::vector<std::shared_ptr<LayerImpl>> copies;
  for (int64_t r = 0; r < spec.repeats; ++r) copies.push_back(make_one(spec));
  return std::make_shared<RepeatImpl>(std::move(copies));
}

std::shared_ptr<DetectHeadImpl> make_head(const LayerSpec& spec) {
  if (const auto* a = std::get_if<DetectArgs>(&spec.typed)) return std::make_shared<DetectImpl>(*a);
  if (const auto* a = std::get_if<DflDetectArgs>(&spec.typed)) return std::make_shared<DflDetectImpl>(*a);
  throw std::runtime_error(spec.where + ": the last layer must be Detect");
}

}  // namespace kestrel
