// Model statistics: FLOPs are counted analytically from each layer's shapes (no forward pass),
// following thop's per-module rules as YOLOv5's model_info uses them.
#include "model/model_info.h"

#include <algorithm>
#include <cstdio>

namespace kestrel {

namespace {

struct HW {
  int64_t h, w;
};

// thop ops of a Conv2d at input size `in`; returns them and sets `out`.
double conv2d_ops(const torch::nn::Conv2dImpl& conv, HW in, HW& out) {
  const auto& o = conv.options;
  const auto& pad = std::get<torch::ExpandingArray<2>>(o.padding());
  int64_t size[2] = {in.h, in.w};
  for (int d = 0; d < 2; ++d)
    size[d] = (size[d] + 2 * (*pad)[d] - (*o.dilation())[d] * ((*o.kernel_size())[d] - 1) - 1) /
                  (*o.stride())[d] +
              1;
  out = {size[0], size[1]};
  // out_c * oh * ow * (in_c / groups) * kh * kw == weight.numel() * oh * ow
  return static_cast<double>(conv.weight.numel()) * static_cast<double>(out.h * out.w);
}

double conv_ops(const ConvImpl& c, HW in, HW& out) {
  double ops = conv2d_ops(*c.conv, in, out);
  if (!c.fused()) ops += 4.0 * static_cast<double>(c.conv->weight.size(0) * out.h * out.w);  // pruned: fewer than options say
  return ops;
}

// thop ops of one single-input block (all but Concat and Detect); updates hw to its output size.
double block_ops(const torch::nn::Module& m, int64_t c_in, HW& hw) {
  HW out{};
  if (const auto* c = dynamic_cast<const ConvImpl*>(&m)) {
    const double ops = conv_ops(*c, hw, out);
    hw = out;
    return ops;
  }
  if (const auto* b = dynamic_cast<const BottleneckImpl*>(&m)) {
    HW mid{};
    const double ops = conv_ops(*b->cv1, hw, mid) + conv_ops(*b->cv2, mid, out);
    hw = out;
    return ops;
  }
  if (const auto* c3 = dynamic_cast<const C3Impl*>(&m)) {
    HW branch{};
    double ops = conv_ops(*c3->cv1, hw, branch);
    for (const auto& b : c3->bottlenecks) ops += block_ops(*b, 0, branch);
    ops += conv_ops(*c3->cv2, hw, out);
    ops += conv_ops(*c3->cv3, branch, out);
    hw = out;
    return ops;
  }
  if (const auto* sppf = dynamic_cast<const SPPFImpl*>(&m)) {
    HW mid{};
    const double ops = conv_ops(*sppf->cv1, hw, mid) + conv_ops(*sppf->cv2, mid, out);
    hw = out;
    return ops;
  }
  if (const auto* spp = dynamic_cast<const SPPImpl*>(&m)) {
    HW mid{};
    const double ops = conv_ops(*spp->cv1, hw, mid) + conv_ops(*spp->cv2, mid, out);
    hw = out;
    return ops;
  }
  if (const auto* up = dynamic_cast<const UpsampleImpl*>(&m)) {
    hw = {static_cast<int64_t>(static_cast<double>(hw.h) * up->scale()),
          static_cast<int64_t>(static_cast<double>(hw.w) * up->scale())};
    return static_cast<double>(c_in * hw.h * hw.w);
  }
  if (const auto* rep = dynamic_cast<const RepeatImpl*>(&m)) {
    double ops = 0;
    for (const auto& layer : rep->layers()) ops += block_ops(*layer, c_in, hw);
    return ops;
  }
  return 0.0;  // Concat, pooling, activations
}

// thop ops per layer on a square input of side `side`.
std::vector<double> layer_ops(const DetectionModelImpl& model, int64_t side) {
  const auto& layers = model.spec().layers;
  std::vector<HW> out_hw(layers.size());
  std::vector<double> ops(layers.size(), 0.0);
  const HW image{side, side};
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerSpec& L = layers[i];
    const auto hw_of = [&](int64_t src) { return src < 0 ? image : out_hw[src]; };
    if (i + 1 == layers.size()) {
      const DetectImpl& det = *model.detect();
      for (size_t lvl = 0; lvl < L.sources.size(); ++lvl) {
        HW out{};
        ops[i] += conv2d_ops(*det.convs[lvl], hw_of(L.sources[lvl]), out);
      }
      break;
    }
    HW hw = hw_of(L.sources[0]);
    const int64_t c_in = L.sources[0] < 0 ? model.spec().ch : layers[L.sources[0]].c_out;
    ops[i] = block_ops(*model.layer(i), c_in, hw);
    out_hw[i] = hw;
  }
  return ops;
}

int64_t probe_side(const DetectionModelImpl& model) {
  const auto& s = model.stride();
  return std::max<int64_t>(static_cast<int64_t>(*std::max_element(s.begin(), s.end())), 32);
}

// GFLOPs at imgsz from ops on the probe: (ops / 1e9 * 2) * imgsz / side * imgsz / side.
double scaled_gflops(double ops, int64_t side, int64_t imgsz) {
  const double g = ops / 1e9 * 2;
  return g * static_cast<double>(imgsz) / static_cast<double>(side) * static_cast<double>(imgsz) /
         static_cast<double>(side);
}

}  // namespace

std::vector<double> layer_gflops(const DetectionModelImpl& model, int64_t imgsz) {
  const int64_t side = probe_side(model);
  std::vector<double> out;
  for (double ops : layer_ops(model, side)) out.push_back(scaled_gflops(ops, side, imgsz));
  return out;
}

std::vector<int64_t> layer_params(const DetectionModelImpl& model) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < model.num_layers(); ++i) {
    int64_t n = 0;
    for (const auto& p : model.layer(i)->parameters()) n += p.numel();
    out.push_back(n);
  }
  return out;
}

int64_t python_module_count(const DetectionModelImpl& model) {
  int64_t count = 1;  // the model itself
  bool shared_act = false;
  for (const auto& m : model.modules(/*include_self=*/false)) {
    ++count;
    if (const auto* conv = dynamic_cast<const ConvImpl*>(m.get())) {
      if (conv->has_act())
        shared_act = true;
      else
        ++count;  // its own nn.Identity
    }
  }
  return count + (shared_act ? 1 : 0);
}

ModelSummary model_summary(const DetectionModelImpl& model, int64_t imgsz) {
  ModelSummary s;
  std::string stem = model.config().name;
  if (const auto dot = stem.rfind('.'); dot != std::string::npos) stem.erase(dot);
  for (size_t pos = stem.find("yolov5"); pos != std::string::npos; pos = stem.find("yolov5", pos))
    stem.replace(pos, 6, "YOLOv5");
  s.name = stem.empty() ? "Model" : stem;
  s.layers = python_module_count(model);
  for (const auto& p : model.parameters()) {
    s.parameters += p.numel();
    if (p.requires_grad()) s.gradients += p.numel();
  }
  const int64_t side = probe_side(model);
  double ops = 0;
  for (double o : layer_ops(model, side)) ops += o;
  s.gflops = scaled_gflops(ops, side, imgsz);
  return s;
}

std::string ModelSummary::line() const {
  char gf[64];
  std::snprintf(gf, sizeof gf, "%.1f", gflops);
  return name + " summary: " + std::to_string(layers) + " layers, " + std::to_string(parameters) +
         " parameters, " + std::to_string(gradients) + " gradients, " + gf + " GFLOPs";
}

std::string layer_table(const DetectionModelImpl& model) {
  const auto params = layer_params(model);
  char buf[512];
  std::snprintf(buf, sizeof buf, "%3s%18s%3s%10s  %-40s%-30s\n", "", "from", "n", "params",
                "module", "arguments");
  std::string out = buf;
  for (const LayerSpec& L : model.spec().layers) {
    std::string from;
    if (L.from_is_list) {
      std::vector<Arg> f;
      for (int64_t v : L.from) f.push_back(Arg::integer(v));
      from = python_repr(f);
    } else {
      from = std::to_string(L.from[0]);
    }
    std::snprintf(buf, sizeof buf, "%3lld%18s%3lld%10lld  %-40s", static_cast<long long>(L.index),
                  from.c_str(), static_cast<long long>(L.n),
                  static_cast<long long>(params[L.index]), L.python_type.c_str());
    std::string args = python_repr(L.args);
    if (args.size() < 30) args.resize(30, ' ');
    out += buf + args + "\n";
  }
  return out;
}

}  // namespace kestrel
