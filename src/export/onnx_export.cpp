// Walks the DetectionModel's layer list and emits one ONNX node group per module: Conv (+ Sigmoid,
// Mul for SiLU), Bottleneck's Add, C3 and Concat, SPP/SPPF's MaxPool, Upsample's Resize, C2f/C3k2's
// halves (Slice), C2PSA's attention (MatMul, Softmax), and the head's decoding: YOLOv5's anchor grid,
// or the DFL expectation and dist2bbox of the anchor-free head. Tensors are named after the model's
// state-dict keys.
#include "export/onnx_export.h"

#include <stdexcept>

#include "export/onnx_model.h"
#include "model/dfl_detect.h"
#include "model/ultralytics_blocks.h"

namespace kestrel {

namespace {

constexpr int64_t kOpset = 12;

std::vector<int64_t> dims_of(const torch::Tensor& t) { return {t.sizes().begin(), t.sizes().end()}; }

std::vector<float> floats_of(const torch::Tensor& t) {
  const torch::Tensor c = t.detach().to(torch::kCPU, torch::kFloat).contiguous();
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

class GraphEmitter {
 public:
  explicit GraphEmitter(OnnxGraph& graph) : g_(graph) {}

  // The input's [1, ch, h, w] for the layer about to be emitted (attention reshapes by it).
  void set_input_shape(std::vector<int64_t> shape) { input_shape_ = std::move(shape); }

  // One layer of the list (all but Detect) on its input values; returns its output value.
  std::string layer(const torch::nn::Module& m, const std::vector<std::string>& in, const std::string& scope) {
    if (const auto* c = dynamic_cast<const ConvImpl*>(&m)) return conv(*c, in[0], scope);
    if (const auto* b = dynamic_cast<const BottleneckImpl*>(&m)) return bottleneck(*b, in[0], scope);
    if (const auto* c3 = dynamic_cast<const C3Impl*>(&m)) return c3_block(*c3, in[0], scope);
    if (const auto* s = dynamic_cast<const SPPFImpl*>(&m)) return sppf(*s, in[0], scope);
    if (const auto* s = dynamic_cast<const SPPImpl*>(&m)) return spp(*s, in[0], scope);
    if (const auto* u = dynamic_cast<const UpsampleImpl*>(&m)) return upsample(*u, in[0], scope);
    if (const auto* c = dynamic_cast<const C2fImpl*>(&m)) return c2f(*c, in[0], scope);
    if (const auto* c = dynamic_cast<const C2PSAImpl*>(&m)) return c2psa(*c, in[0], scope);
    if (dynamic_cast<const ConcatImpl*>(&m)) {
      // The yaml's Concat joins channels (dim 1), the only dimension YOLOv5's models use.
      return g_.add_node("Concat", in, scope, {OnnxAttribute::of_int("axis", 1)});
    }
    if (const auto* r = dynamic_cast<const RepeatImpl*>(&m)) {
      std::string x = in[0];
      for (size_t i = 0; i < r->layers().size(); ++i) x = layer(*r->layers()[i], {x}, scope + "." + std::to_string(i));
      return x;
    }
    throw std::invalid_argument("ONNX export: " + scope + " (" + m.name() + ") has no ONNX form");
  }

  // One Detect level: conv, [1, na*no, ny, nx] -> [1, na, ny*nx, no], sigmoid, then
  // xy = s*2*stride + (grid - 0.5)*stride, wh = s^2 * 4*anchor, as DetectImpl::decode.
  std::string detect_level(const DetectImpl& d, int64_t level, const std::string& x, int64_t ny, int64_t nx,
                           const std::string& scope) {
    const int64_t na = d.na, no = d.no, cells = ny * nx;
    const double stride = d.strides()[level];
    const std::string p = conv2d(*d.convs[level], x, scope);
    const std::string grouped = g_.add_node("Reshape", {p, ints(scope + ".shape", {1, na, no, cells})}, scope + "/reshape");
    const std::string rows = g_.add_node("Transpose", {grouped}, scope + "/transpose", {OnnxAttribute::of_ints("perm", {0, 1, 3, 2})});
    const std::string s = g_.add_node("Sigmoid", {rows}, scope + "/sigmoid");
    const std::string sxy = slice(s, 0, 2, 3, scope + "/xy"), swh = slice(s, 2, 4, 3, scope + "/wh");
    const std::string sconf = slice(s, 4, no, 3, scope + "/conf");

    std::vector<float> offset, anchor4;  // [1, na, ny*nx, 2] each
    const torch::Tensor pixel_anchors = (d.anchors[level] * stride).to(torch::kCPU, torch::kFloat).contiguous();
    const auto a = pixel_anchors.accessor<float, 2>();
    for (int64_t k = 0; k < na; ++k)
      for (int64_t gy = 0; gy < ny; ++gy)
        for (int64_t gx = 0; gx < nx; ++gx) {
          offset.push_back(static_cast<float>((static_cast<double>(gx) - 0.5) * stride));
          offset.push_back(static_cast<float>((static_cast<double>(gy) - 0.5) * stride));
          anchor4.push_back(4 * a[k][0]);
          anchor4.push_back(4 * a[k][1]);
        }
    const std::vector<int64_t> pair_shape{1, na, cells, 2};
    const std::string xy_scaled = g_.add_node(
        "Mul", {sxy, g_.add_floats(scope + ".two_stride", {1}, {static_cast<float>(2 * stride)})}, scope + "/xy_scaled");
    const std::string xy = g_.add_node("Add", {xy_scaled, g_.add_floats(scope + ".grid", pair_shape, offset)}, scope + "/xy_pixels");
    const std::string wh_squared = g_.add_node("Mul", {swh, swh}, scope + "/wh_squared");
    const std::string wh = g_.add_node("Mul", {wh_squared, g_.add_floats(scope + ".anchor_grid", pair_shape, anchor4)}, scope + "/wh_pixels");
    const std::string decoded = g_.add_node("Concat", {xy, wh, sconf}, scope + "/decoded", {OnnxAttribute::of_int("axis", 3)});
    return g_.add_node("Reshape", {decoded, ints(scope + ".rows", {1, na * cells, no})}, scope + "/rows");
  }

  // The anchor-free head as Ultralytics exports it: per level cat(box branch, class branch) flattened
  // to [1, no, cells], the levels joined, DFL's expectation (softmax with the bins last, then DFL's
  // fixed 1x1 conv with the bins as channels, as Ultralytics' own export), dist2bbox around the cell centres times the stride, sigmoid classes:
  // [1, 4 + nc, N], as DflDetectImpl::decode transposed.
  std::string dfl_head(const DflDetectImpl& d, const std::vector<std::string>& in, const std::vector<torch::Tensor>& raw,
                       const std::string& scope) {
    std::vector<std::string> levels;
    std::vector<float> centres_x, centres_y, strides;
    for (int64_t l = 0; l < d.nl; ++l) {
      const std::string s = scope + ".level" + std::to_string(l);
      const std::string box = chain(*d.box_branches[l], in[l], scope + ".cv2." + std::to_string(l));
      const std::string cls = chain(*d.class_branches[l], in[l], scope + ".cv3." + std::to_string(l));
      const std::string both = g_.add_node("Concat", {box, cls}, s + "/cat", {OnnxAttribute::of_int("axis", 1)});
      const int64_t ny = raw[l].size(2), nx = raw[l].size(3);
      levels.push_back(g_.add_node("Reshape", {both, ints(s + ".shape", {1, d.no, ny * nx})}, s + "/flat"));
      for (int64_t gy = 0; gy < ny; ++gy)
        for (int64_t gx = 0; gx < nx; ++gx) {
          centres_x.push_back(static_cast<float>(gx) + 0.5f);
          centres_y.push_back(static_cast<float>(gy) + 0.5f);
          strides.push_back(static_cast<float>(d.strides()[l]));
        }
    }
    const int64_t n = static_cast<int64_t>(strides.size()), bins = d.reg_max, box_channels = 4 * bins;
    const std::string x = g_.add_node("Concat", levels, scope + "/levels", {OnnxAttribute::of_int("axis", 2)});
    const std::string box = slice(x, 0, box_channels, 1, scope + "/box"), cls = slice(x, box_channels, d.no, 1, scope + "/cls");
    const std::string sides = g_.add_node("Reshape", {box, ints(scope + ".dfl_shape", {1, 4, bins, n})}, scope + "/sides");
    const std::string last = g_.add_node("Transpose", {sides}, scope + "/bins_last", {OnnxAttribute::of_ints("perm", {0, 1, 3, 2})});
    const std::string p = g_.add_node("Softmax", {last}, scope + "/softmax", {OnnxAttribute::of_int("axis", 3)});
    const std::string first = g_.add_node("Transpose", {p}, scope + "/bins_first", {OnnxAttribute::of_ints("perm", {0, 3, 1, 2})});
    const std::string expect = conv2d(*d.dfl->conv, first, scope + ".dfl.conv");  // [1, 1, 4, N]
    const std::string dist = g_.add_node("Reshape", {expect, ints(scope + ".dist_shape", {1, 4, n})}, scope + "/dist");
    std::vector<float> centre = centres_x;
    centre.insert(centre.end(), centres_y.begin(), centres_y.end());
    const std::string anchors = g_.add_floats(scope + ".anchors", {1, 2, n}, centre);
    const std::string x1y1 = g_.add_node("Sub", {anchors, slice(dist, 0, 2, 1, scope + "/lt")}, scope + "/x1y1");
    const std::string x2y2 = g_.add_node("Add", {anchors, slice(dist, 2, 4, 1, scope + "/rb")}, scope + "/x2y2");
    const std::string sum = g_.add_node("Add", {x1y1, x2y2}, scope + "/corner_sum");
    const std::string xy = g_.add_node("Mul", {sum, g_.add_floats(scope + ".half", {1}, {0.5f})}, scope + "/xy");
    const std::string wh = g_.add_node("Sub", {x2y2, x1y1}, scope + "/wh");
    const std::string grid = g_.add_node("Concat", {xy, wh}, scope + "/xywh_grid", {OnnxAttribute::of_int("axis", 1)});
    std::vector<float> stride4;  // one row per coordinate: OpenCV 4.6 cannot broadcast a [1, 1, N] constant
    for (int k = 0; k < 4; ++k) stride4.insert(stride4.end(), strides.begin(), strides.end());
    const std::string xywh = g_.add_node("Mul", {grid, g_.add_floats(scope + ".strides", {1, 4, n}, stride4)}, scope + "/xywh");
    const std::string scores = g_.add_node("Sigmoid", {cls}, scope + "/scores");
    return g_.add_node("Concat", {xywh, scores}, "output0", {OnnxAttribute::of_int("axis", 1)});
  }

 private:
  std::string ints(const std::string& name, const std::vector<int64_t>& values) {
    return g_.add_int64s(name, {static_cast<int64_t>(values.size())}, values);
  }

  // x[begin:end] along one axis.
  std::string slice(const std::string& x, int64_t begin, int64_t end, int64_t axis, const std::string& name) {
    return g_.add_node("Slice", {x, ints(name + ".starts", {begin}), ints(name + ".ends", {end}), ints(name + ".axes", {axis})}, name);
  }

  std::string conv2d(const torch::nn::Conv2dImpl& c, const std::string& x, const std::string& scope) {
    const auto& o = c.options;
    const auto* pad = std::get_if<torch::ExpandingArray<2>>(&o.padding());
    if (!pad) throw std::invalid_argument("ONNX export: " + scope + " uses 'same'/'valid' padding");
    std::vector<std::string> inputs{x, g_.add_floats(scope + ".weight", dims_of(c.weight), floats_of(c.weight))};
    if (c.bias.defined()) inputs.push_back(g_.add_floats(scope + ".bias", dims_of(c.bias), floats_of(c.bias)));
    const int64_t ph = (*pad)->at(0), pw = (*pad)->at(1);
    return g_.add_node("Conv", inputs, scope + "/conv",
                       {OnnxAttribute::of_ints("kernel_shape", {c.weight.size(2), c.weight.size(3)}),
                        OnnxAttribute::of_ints("strides", {o.stride()->at(0), o.stride()->at(1)}),
                        OnnxAttribute::of_ints("pads", {ph, pw, ph, pw}),
                        OnnxAttribute::of_ints("dilations", {o.dilation()->at(0), o.dilation()->at(1)}),
                        OnnxAttribute::of_int("group", o.groups())});
  }

  std::string conv(const ConvImpl& c, const std::string& x, const std::string& scope) {
    if (!c.fused()) throw std::invalid_argument("ONNX export: " + scope + " is not fused (BatchNorm left)");
    const std::string y = conv2d(*c.conv, x, scope + ".conv");
    if (!c.has_act()) return y;
    const std::string gate = g_.add_node("Sigmoid", {y}, scope + "/sigmoid");  // SiLU(y) = y * sigmoid(y)
    return g_.add_node("Mul", {y, gate}, scope + "/silu");
  }

  std::string bottleneck(const BottleneckImpl& b, const std::string& x, const std::string& scope) {
    const std::string y = conv(*b.cv2, conv(*b.cv1, x, scope + ".cv1"), scope + ".cv2");
    return b.adds_input() ? g_.add_node("Add", {x, y}, scope + "/add") : y;
  }

  // A Chain's steps in order: Conv, a plain (biased) Conv2d, or a nested Chain.
  std::string chain(const ChainImpl& c, const std::string& x, const std::string& scope) {
    std::string y = x;
    for (const auto& item : c.named_children()) {
      const std::shared_ptr<torch::nn::Module>& child = item.value();
      const std::string s = scope + "." + item.key();
      if (const auto* conv_step = dynamic_cast<const ConvImpl*>(child.get())) y = conv(*conv_step, y, s);
      else if (const auto* plain = dynamic_cast<const torch::nn::Conv2dImpl*>(child.get())) y = conv2d(*plain, y, s);
      else if (const auto* nested = dynamic_cast<const ChainImpl*>(child.get())) y = chain(*nested, y, s);
      else throw std::invalid_argument("ONNX export: " + s + " (" + child->name() + ") has no ONNX form");
    }
    return y;
  }

  // cv2(cat(a, b, m0(b), m1(m0(b)), ...)) with a, b the halves of cv1's output.
  std::string c2f(const C2fImpl& c, const std::string& x, const std::string& scope) {
    const std::string y = conv(*c.cv1, x, scope + ".cv1");
    const std::array<int64_t, 2> h = c.halves();
    std::vector<std::string> parts{slice(y, 0, h[0], 1, scope + "/a"), slice(y, h[0], h[0] + h[1], 1, scope + "/b")};
    for (size_t i = 0; i < c.blocks.size(); ++i) parts.push_back(layer(*c.blocks[i], {parts.back()}, scope + ".m." + std::to_string(i)));
    return conv(*c.cv2, g_.add_node("Concat", parts, scope + "/cat", {OnnxAttribute::of_int("axis", 1)}), scope + ".cv2");
  }

  std::string c2psa(const C2PSAImpl& c, const std::string& x, const std::string& scope) {
    const std::string y = conv(*c.cv1, x, scope + ".cv1");
    const std::array<int64_t, 2> h = c.halves();
    std::string b = slice(y, h[0], h[0] + h[1], 1, scope + "/b");
    for (size_t i = 0; i < c.m->size(); ++i) {
      const std::string s = scope + ".m." + std::to_string(i);
      const auto& block = *c.m->ptr(i)->as<PSABlockImpl>();
      b = g_.add_node("Add", {b, attention(*block.attn, b, s + ".attn")}, s + "/attn_add");
      const std::string hidden = conv(*block.ffn->ptr(0)->as<ConvImpl>(), b, s + ".ffn.0");
      b = g_.add_node("Add", {b, conv(*block.ffn->ptr(1)->as<ConvImpl>(), hidden, s + ".ffn.1")}, s + "/ffn_add");
    }
    const std::string joined = g_.add_node("Concat", {slice(y, 0, h[0], 1, scope + "/a"), b}, scope + "/cat", {OnnxAttribute::of_int("axis", 1)});
    return conv(*c.cv2, joined, scope + ".cv2");
  }

  // proj(v @ softmax(q^T k x scale)^T + pe(v)) over the h x w pixels of the block's input.
  std::string attention(const AttentionImpl& a, const std::string& x, const std::string& scope) {
    const int64_t ch = a.num_heads * a.head_dim, h = input_shape_.at(2), w = input_shape_.at(3), n = h * w;
    const std::string qkv = conv(*a.qkv, x, scope + ".qkv");
    const std::string heads = g_.add_node("Reshape", {qkv, ints(scope + ".heads", {1, a.num_heads, 2 * a.key_dim + a.head_dim, n})}, scope + "/heads");
    const std::string q = slice(heads, 0, a.key_dim, 2, scope + "/q"), k = slice(heads, a.key_dim, 2 * a.key_dim, 2, scope + "/k");
    const std::string v = slice(heads, 2 * a.key_dim, 2 * a.key_dim + a.head_dim, 2, scope + "/v");
    const std::string q_scaled = g_.add_node("Mul", {q, g_.add_floats(scope + ".scale", {1}, {static_cast<float>(a.scale)})}, scope + "/q_scaled");
    const std::string qt = g_.add_node("Transpose", {q_scaled}, scope + "/qt", {OnnxAttribute::of_ints("perm", {0, 1, 3, 2})});
    const std::string logits = g_.add_node("MatMul", {qt, k}, scope + "/logits");
    const std::string attn = g_.add_node("Softmax", {logits}, scope + "/softmax", {OnnxAttribute::of_int("axis", 3)});
    const std::string attn_t = g_.add_node("Transpose", {attn}, scope + "/attn_t", {OnnxAttribute::of_ints("perm", {0, 1, 3, 2})});
    const std::string mixed = g_.add_node("MatMul", {v, attn_t}, scope + "/mixed");
    const std::vector<int64_t> map{1, ch, h, w};
    const std::string y = g_.add_node("Reshape", {mixed, ints(scope + ".map", map)}, scope + "/y");
    const std::string v_map = g_.add_node("Reshape", {v, ints(scope + ".v_map", map)}, scope + "/v_map");
    const std::string with_pe = g_.add_node("Add", {y, conv(*a.pe, v_map, scope + ".pe")}, scope + "/pe_add");
    return conv(*a.proj, with_pe, scope + ".proj");
  }

  std::string c3_block(const C3Impl& c3, const std::string& x, const std::string& scope) {
    std::string y = conv(*c3.cv1, x, scope + ".cv1");
    for (size_t i = 0; i < c3.bottlenecks.size(); ++i) y = bottleneck(*c3.bottlenecks[i], y, scope + ".m." + std::to_string(i));
    const std::string joined = g_.add_node("Concat", {y, conv(*c3.cv2, x, scope + ".cv2")}, scope + "/cat",
                                           {OnnxAttribute::of_int("axis", 1)});
    return conv(*c3.cv3, joined, scope + ".cv3");
  }

  std::string max_pool(const torch::nn::MaxPool2dImpl& pool, const std::string& x, const std::string& name) {
    const auto& o = pool.options;
    return g_.add_node("MaxPool", {x}, name,
                       {OnnxAttribute::of_ints("kernel_shape", {o.kernel_size()->at(0), o.kernel_size()->at(1)}),
                        OnnxAttribute::of_ints("strides", {o.stride()->at(0), o.stride()->at(1)}),
                        OnnxAttribute::of_ints("pads", {o.padding()->at(0), o.padding()->at(1), o.padding()->at(0), o.padding()->at(1)})});
  }

  std::string sppf(const SPPFImpl& s, const std::string& x, const std::string& scope) {
    std::vector<std::string> parts{conv(*s.cv1, x, scope + ".cv1")};
    for (int64_t i = 1; i <= s.pools(); ++i) parts.push_back(max_pool(*s.m, parts.back(), scope + "/pool" + std::to_string(i)));
    const std::string y = conv(*s.cv2, g_.add_node("Concat", parts, scope + "/cat", {OnnxAttribute::of_int("axis", 1)}), scope + ".cv2");
    return s.adds_input() ? g_.add_node("Add", {y, x}, scope + "/add") : y;
  }

  std::string spp(const SPPImpl& s, const std::string& x, const std::string& scope) {
    std::vector<std::string> parts{conv(*s.cv1, x, scope + ".cv1")};
    for (size_t i = 0; i < s.pools.size(); ++i) parts.push_back(max_pool(*s.pools[i], parts.front(), scope + ".m." + std::to_string(i)));
    return conv(*s.cv2, g_.add_node("Concat", parts, scope + "/cat", {OnnxAttribute::of_int("axis", 1)}), scope + ".cv2");
  }

  std::string upsample(const UpsampleImpl& u, const std::string& x, const std::string& scope) {
    // opset 11+ Resize(X, roi, scales); the attributes are nn.Upsample(mode='nearest')'s export.
    const auto scale = static_cast<float>(u.scale());
    return g_.add_node("Resize", {x, g_.add_floats(scope + ".roi", {0}, {}), g_.add_floats(scope + ".scales", {4}, {1, 1, scale, scale})},
                       scope + "/resize",
                       {OnnxAttribute::of_string("mode", "nearest"),
                        OnnxAttribute::of_string("coordinate_transformation_mode", "asymmetric"),
                        OnnxAttribute::of_string("nearest_mode", "floor")});
  }

  OnnxGraph& g_;
  std::vector<int64_t> input_shape_;
};

std::string python_str(const std::string& s) {
  if (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) return "\"" + s + "\"";
  std::string out = "'";
  for (char c : s) {
    if (c == '\'' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "'";
}

}  // namespace

std::string python_names_dict(const std::vector<std::string>& names) {
  std::string out = "{";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + std::to_string(i) + ": " + python_str(names[i]);
  return out + "}";
}

OnnxExport export_onnx(DetectionModelImpl& model, int img_h, int img_w) {
  const int64_t max_stride = static_cast<int64_t>(model.stride().back());
  if (img_h <= 0 || img_w <= 0 || img_h % max_stride || img_w % max_stride)
    throw std::invalid_argument("ONNX export: image size " + std::to_string(img_h) + "x" + std::to_string(img_w) +
                                " is not a multiple of the model's stride " + std::to_string(max_stride));
  OnnxExport out;
  out.input_shape = {1, model.spec().ch, img_h, img_w};
  // The shapes come from a forward at the export shape, as torch.onnx traces one: the head's levels,
  // and each layer's input (attention reshapes by it).
  torch::NoGradGuard no_grad;
  const torch::Tensor zeros = torch::zeros(out.input_shape, model.parameters().front().options());
  const std::vector<torch::Tensor> raw = model.forward(zeros);

  OnnxGraph graph("kestrel");
  graph.add_input("images", out.input_shape);
  GraphEmitter emit(graph);
  const auto& layers = model.spec().layers;
  std::vector<std::string> outputs;
  std::vector<torch::Tensor> values;  // each layer's output at the export shape
  const auto input_of = [&](int64_t src, size_t i) { return src < 0 ? (i ? outputs[i - 1] : "images") : outputs[src]; };
  const auto value_of = [&](int64_t src, size_t i) { return src < 0 ? (i ? values[i - 1] : zeros) : values[src]; };
  std::vector<std::string> in;
  std::vector<torch::Tensor> in_values;
  for (size_t i = 0; i < layers.size(); ++i) {
    in.clear(), in_values.clear();
    for (int64_t s : layers[i].sources) in.push_back(input_of(s, i)), in_values.push_back(value_of(s, i));
    const std::string scope = "model." + std::to_string(i);
    if (i + 1 < layers.size()) {
      auto& layer = dynamic_cast<LayerImpl&>(*model.layer(i));
      emit.set_input_shape(dims_of(in_values[0]));
      outputs.push_back(emit.layer(layer, in, scope));
      values.push_back(layer.run(in_values));
      continue;
    }
    if (model.anchor_free()) {
      emit.dfl_head(dynamic_cast<const DflDetectImpl&>(model.head()), in, raw, scope);
      continue;
    }
    const DetectImpl& detect = *model.detect();
    std::vector<std::string> levels;
    for (int64_t l = 0; l < detect.nl; ++l)
      levels.push_back(emit.detect_level(detect, l, in[l], raw[l].size(2), raw[l].size(3), scope + ".m." + std::to_string(l)));
    graph.add_node("Concat", levels, "output0", {OnnxAttribute::of_int("axis", 1)});
  }
  int64_t rows = 0;  // YOLOv5: anchors x cells per level; anchor-free: cells
  for (const auto& r : raw) rows += model.anchor_free() ? r.size(2) * r.size(3) : r.size(1) * r.size(2) * r.size(3);
  out.output_shape = model.anchor_free() ? std::vector<int64_t>{1, model.no() - 4 * model.config().reg_max + 4, rows}
                                         : std::vector<int64_t>{1, rows, model.no()};
  graph.add_output("output0", out.output_shape);
  out.nodes = graph.node_count();
  out.bytes = graph.serialize(kOpset, "kestrel", {{"stride", std::to_string(max_stride)}, {"names", python_names_dict(model.names())}});
  return out;
}

}  // namespace kestrel
