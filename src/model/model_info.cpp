// Model statistics: FLOPs are counted analytically from each layer's shapes (no forward pass),
// following thop's per-module rules as YOLOv5's model_info uses them.
#include "model/model_info.h"

#include <algorithm>

#include "model/dfl_detect.h"
#include "model/ultralytics_blocks.h"
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

// thop ops of the Conv2d and BatchNorm2d modules inside `m` (itself included), all running at `hw`:
// true of every block but a strided Conv layer (counted by conv_ops) and the head's levels. The
// thop Ultralytics uses also counts matrix products: an Attention's two, quadratic in the pixels.
double ops_at(const torch::nn::Module& m, HW hw) {
  double ops = 0;
  for (const auto& sub : m.modules(/*include_self=*/true)) {
    if (const auto* conv = dynamic_cast<const torch::nn::Conv2dImpl*>(sub.get())) {
      HW out{};
      ops += conv2d_ops(*conv, hw, out);
    } else if (const auto* bn = dynamic_cast<const torch::nn::BatchNorm2dImpl*>(sub.get())) {
      ops += 4.0 * static_cast<double>(bn->weight.size(0) * hw.h * hw.w);
    } else if (const auto* attn = dynamic_cast<const AttentionImpl*>(sub.get())) {
      const auto n = static_cast<double>(hw.h * hw.w);  // q^T k: heads x n x n x key_dim; v attn^T: heads x head_dim x n x n
      ops += static_cast<double>(attn->num_heads) * n * n * static_cast<double>(attn->key_dim + attn->head_dim);
    }
  }
  return ops;
}

// thop ops of one single-input layer (all but Concat and Detect); updates hw to its output size.
// Nearest upsampling costs its output size in YOLOv5's thop and nothing in Ultralytics'.
double block_ops(const torch::nn::Module& m, int64_t c_in, HW& hw, bool ultralytics) {
  HW out{};
  if (const auto* c = dynamic_cast<const ConvImpl*>(&m)) {
    const double ops = conv_ops(*c, hw, out);
    hw = out;
    return ops;
  }
  if (const auto* up = dynamic_cast<const UpsampleImpl*>(&m)) {
    hw = {static_cast<int64_t>(static_cast<double>(hw.h) * up->scale()),
          static_cast<int64_t>(static_cast<double>(hw.w) * up->scale())};
    return ultralytics ? 0.0 : static_cast<double>(c_in * hw.h * hw.w);
  }
  if (const auto* rep = dynamic_cast<const RepeatImpl*>(&m)) {
    double ops = 0;
    for (const auto& layer : rep->layers()) ops += block_ops(*layer, c_in, hw, ultralytics);
    return ops;
  }
  return ops_at(m, hw);  // stride-1 blocks (Bottleneck, C3, C2f, C2PSA, SPP, SPPF), Concat
}

// The head's ops: each level's convolutions at that level's size. Ultralytics' thop profiles in
// eval mode, so the anchor-free head's DFL expectation (a 1x1 conv of reg_max inputs on each of the
// 4 sides of every cell) counts as well.
double head_ops(const DetectHeadImpl& head, const std::vector<HW>& level_hw) {
  double ops = 0;
  if (const auto* anchor = dynamic_cast<const DetectImpl*>(&head)) {
    for (size_t lvl = 0; lvl < level_hw.size(); ++lvl) ops += ops_at(*anchor->convs[lvl], level_hw[lvl]);
  } else if (const auto* dfl = dynamic_cast<const DflDetectImpl*>(&head)) {
    for (size_t lvl = 0; lvl < level_hw.size(); ++lvl) {
      const HW hw = level_hw[lvl];
      ops += ops_at(*dfl->box_branches[lvl], hw) + ops_at(*dfl->class_branches[lvl], hw) +
             static_cast<double>(4 * dfl->reg_max * hw.h * hw.w);
    }
  }
  return ops;
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
      std::vector<HW> level_hw;
      for (int64_t src : L.sources) level_hw.push_back(hw_of(src));
      ops[i] = head_ops(model.head(), level_hw);
      break;
    }
    HW hw = hw_of(L.sources[0]);
    const int64_t c_in = L.sources[0] < 0 ? model.spec().ch : layers[L.sources[0]].c_out;
    ops[i] = block_ops(*model.layer(i), c_in, hw, model.config().ultralytics);
    out_hw[i] = hw;
  }
  return ops;
}

// The side ops are counted at: YOLOv5 profiles a max(stride, 32) square and scales by area, which is
// exact for convolutions; Ultralytics' count is exact at the image size itself (its attention grows
// with the square of the area).
int64_t probe_side(const DetectionModelImpl& model, int64_t imgsz) {
  if (model.config().ultralytics) return imgsz;
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
  const int64_t side = probe_side(model, imgsz);
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
  const bool ultralytics = model.config().ultralytics;
  int64_t count = ultralytics ? 0 : 1;  // YOLOv5 counts the model itself
  bool shared_act = false;
  for (const auto& m : model.modules(/*include_self=*/false)) {
    const bool leaf = m->children().empty();
    if (!ultralytics || leaf) ++count;  // Ultralytics counts leaf modules only
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
  // YOLOv5 names yolov5 -> YOLOv5, Ultralytics every yolo -> YOLO (YOLOv8n, YOLO11n).
  const std::string family = model.config().ultralytics ? "yolo" : "yolov5";
  for (size_t pos = stem.find(family); pos != std::string::npos; pos = stem.find(family, pos))
    stem.replace(pos, 4, "YOLO");
  s.name = stem.empty() ? "Model" : stem;
  s.layers = python_module_count(model);
  s.thousands = model.config().ultralytics;
  for (const auto& p : model.parameters()) {
    s.parameters += p.numel();
    if (p.requires_grad()) s.gradients += p.numel();
  }
  const int64_t side = probe_side(model, imgsz);
  double ops = 0;
  for (double o : layer_ops(model, side)) ops += o;
  s.gflops = scaled_gflops(ops, side, imgsz);
  return s;
}

std::string ModelSummary::line() const {
  char gf[64];
  std::snprintf(gf, sizeof gf, "%.1f", gflops);
  const auto count = [&](int64_t v) {
    std::string digits = std::to_string(v);
    if (thousands)
      for (int64_t at = static_cast<int64_t>(digits.size()) - 3; at > 0; at -= 3) digits.insert(static_cast<size_t>(at), ",");
    return digits;
  };
  return name + " summary: " + count(layers) + " layers, " + count(parameters) + " parameters, " + count(gradients) +
         " gradients, " + gf + " GFLOPs";
}

std::string layer_table(const DetectionModelImpl& model) {
  const auto params = layer_params(model);
  // Ultralytics widens the from and module columns (20 and 45 against YOLOv5's 18 and 40).
  const int from_w = model.config().ultralytics ? 20 : 18, module_w = model.config().ultralytics ? 45 : 40;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%3s%*s%3s%10s  %-*s%-30s\n", "", from_w, "from", "n", "params", module_w,
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
    std::snprintf(buf, sizeof buf, "%3lld%*s%3lld%10lld  %-*s", static_cast<long long>(L.index), from_w,
                  from.c_str(), static_cast<long long>(L.n), static_cast<long long>(params[L.index]), module_w,
                  L.python_type.c_str());
    std::string args = python_repr(L.args);
    if (args.size() < 30) args.resize(30, ' ');
    out += buf + args + "\n";
  }
  return out;
}

}  // namespace kestrel
