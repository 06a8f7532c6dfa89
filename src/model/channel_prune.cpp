// Channel pruning (see channel_prune.h): choose the channels, then walk the layers cutting each
// convolution's outputs and its consumers' inputs.
#include "model/channel_prune.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <stdexcept>

#include "model/dfl_detect.h"
#include "model/ultralytics_blocks.h"

namespace kestrel {

namespace {

// The channels of a layer output: which of the original ones remain, and the constant value each
// removed one is taken to carry.
struct ChannelSet {
  int64_t total = 0;
  torch::Tensor keep, dropped, dropped_value;  // int64 indices; float values

  static ChannelSet all(int64_t c) {
    return {c, torch::arange(c), torch::empty({0}, torch::kLong), torch::empty({0})};
  }
  static ChannelSet concat(const std::vector<ChannelSet>& parts) {
    ChannelSet out;
    std::vector<torch::Tensor> keep, dropped, value;
    for (const ChannelSet& p : parts) {
      keep.push_back(p.keep + out.total);
      dropped.push_back(p.dropped + out.total);
      value.push_back(p.dropped_value);
      out.total += p.total;
    }
    out.keep = torch::cat(keep), out.dropped = torch::cat(dropped), out.dropped_value = torch::cat(value);
    return out;
  }
  // Channels first .. first + count - 1, renumbered from 0 (a split's part).
  ChannelSet slice(int64_t first, int64_t count) const {
    const auto inside = [&](const torch::Tensor& i) { return i.ge(first).logical_and(i.lt(first + count)); };
    const torch::Tensor d = inside(dropped);
    return {count, keep.masked_select(inside(keep)) - first, dropped.masked_select(d) - first, dropped_value.masked_select(d)};
  }
  // A residual add of two sets with the same channels: the removed constants sum.
  ChannelSet plus(const ChannelSet& other) const {
    if (total != other.total || !torch::equal(dropped, other.dropped))
      throw std::runtime_error("prune: a residual add's two inputs keep different channels");
    return {total, keep, dropped, dropped_value + other.dropped_value};
  }
};

const char* layer_kind(const torch::nn::Module& m) {
  if (dynamic_cast<const ConvImpl*>(&m)) return "Conv";
  if (dynamic_cast<const C3Impl*>(&m)) return "C3";
  if (dynamic_cast<const C2fImpl*>(&m)) return "C2f";
  if (dynamic_cast<const C2PSAImpl*>(&m)) return "C2PSA";
  if (dynamic_cast<const SPPFImpl*>(&m)) return "SPPF";
  if (dynamic_cast<const UpsampleImpl*>(&m)) return "Upsample";
  if (dynamic_cast<const ConcatImpl*>(&m)) return "Concat";
  return nullptr;
}

// A depthwise convolution maps each channel to itself: it keeps what its input keeps.
bool depthwise(const ConvImpl& c) {
  const torch::Tensor& w = c.conv->weight;
  return c.conv->options.groups() > 1 && c.conv->options.groups() == w.size(0) && w.size(1) == 1;
}

// Removes the inputs `in` dropped from a convolution's weight, folding their constants into what
// follows the convolution: `shift` (the BatchNorm running mean, subtracted) or `bias` (added).
void cut_inputs(torch::nn::Conv2dImpl& conv, const ChannelSet& in, torch::Tensor* running_mean, torch::Tensor* bias) {
  torch::NoGradGuard no_grad;
  torch::Tensor w = conv.weight;
  if (w.size(1) != in.total)
    throw std::runtime_error("prune: a convolution takes " + std::to_string(w.size(1)) + " channels, its input has " +
                             std::to_string(in.total));
  if (in.dropped.numel()) {
    // Interior pixels see every kernel tap of the constant channel; the few border ones (zero padding) see fewer.
    const torch::Tensor c = (w.index_select(1, in.dropped).sum({2, 3}) * in.dropped_value.to(w.dtype())).sum(1);
    if (running_mean) running_mean->sub_(c);
    if (bias) bias->add_(c);
  }
  conv.weight.set_data(w.index_select(1, in.keep).contiguous());
  fit_options_to_weight(conv);
}

// Keeps output channels `keep` of a Conv block's convolution and BatchNorm.
void keep_outputs(ConvImpl& c, const torch::Tensor& keep) {
  c.conv->weight.set_data(c.conv->weight.index_select(0, keep).contiguous());
  for (torch::Tensor* t : {&c.bn->weight, &c.bn->bias, &c.bn->running_mean, &c.bn->running_var})
    t->set_data(t->index_select(0, keep).contiguous());
  fit_options_to_weight(*c.conv);
}

// A depthwise Conv block follows its input: a constant channel stays constant through its own
// kernel (interior pixels: the value times the taps' sum), then its BatchNorm and activation.
ChannelSet cut_depthwise(ConvImpl& c, const ChannelSet& in) {
  torch::NoGradGuard no_grad;
  if (c.conv->weight.size(0) != in.total)
    throw std::runtime_error("prune: a depthwise convolution has " + std::to_string(c.conv->weight.size(0)) +
                             " channels, its input " + std::to_string(in.total));
  ChannelSet out = in;
  if (in.dropped.numel()) {
    const auto rows = [&](const torch::Tensor& t) { return t.detach().index_select(0, in.dropped).to(torch::kDouble); };
    const torch::nn::BatchNorm2dImpl& bn = *c.bn;
    torch::Tensor v = rows(c.conv->weight).sum({1, 2, 3}) * in.dropped_value.to(torch::kDouble);
    v = (v - rows(bn.running_mean)) / (rows(bn.running_var) + bn.options.eps()).sqrt() * rows(bn.weight) + rows(bn.bias);
    out.dropped_value = (c.has_act() ? torch::silu(v) : v).to(torch::kFloat);
  }
  keep_outputs(c, in.keep);
  return out;
}

// Cuts one Conv block: inputs to `in`, outputs to `keep` (all when undefined). Returns its output set.
ChannelSet cut_conv(ConvImpl& c, const ChannelSet& in, const torch::Tensor& keep) {
  if (depthwise(c)) return cut_depthwise(c, in);
  torch::NoGradGuard no_grad;
  cut_inputs(*c.conv, in, &c.bn->running_mean, nullptr);
  const int64_t total = c.conv->weight.size(0);
  if (!keep.defined()) return ChannelSet::all(total);
  torch::Tensor mask = torch::ones({total}, torch::kBool);
  mask.index_fill_(0, keep, false);
  ChannelSet out{total, keep, mask.nonzero().flatten(), {}};
  const torch::Tensor beta = c.bn->bias.index_select(0, out.dropped);
  out.dropped_value = (c.has_act() ? torch::silu(beta) : beta).to(torch::kFloat).cpu();
  keep_outputs(c, keep);
  return out;
}

// The kept output channels of each prunable convolution (the parts of a split one joined); a
// convolution absent, or the part of one, keeps them all.
class KeepMap {
 public:
  KeepMap(const std::vector<PrunableConv>& convs, const ChannelChoice& choice) {
    std::map<const ConvImpl*, torch::Tensor> kept;
    for (size_t i = 0; i < convs.size(); ++i) {
      const PrunableConv& p = convs[i];
      torch::Tensor& mask = kept[p.conv];
      if (!mask.defined()) mask = torch::ones({p.conv->conv->weight.size(0)}, torch::kBool);
      p.channels(mask).fill_(false).index_fill_(0, choice.keep[i], true);
    }
    for (const auto& [conv, mask] : kept) keep_[conv] = mask.nonzero().flatten();
  }
  torch::Tensor operator()(const ConvImpl* c) const {
    const auto it = keep_.find(c);
    return it == keep_.end() ? torch::Tensor() : it->second;
  }

 private:
  std::map<const ConvImpl*, torch::Tensor> keep_;
};

ChannelSet cut_layer(torch::nn::Module& layer, const ChannelSet& in, const KeepMap& keep);

ChannelSet cut_bottleneck(BottleneckImpl& b, const ChannelSet& in, const KeepMap& keep) {
  const ChannelSet out = cut_conv(*b.cv2, cut_conv(*b.cv1, in, keep(b.cv1.get())), keep(b.cv2.get()));
  return b.adds_input() ? in.plus(out) : out;
}

ChannelSet cut_c3(C3Impl& c3, const ChannelSet& in, const KeepMap& keep) {
  ChannelSet y = cut_conv(*c3.cv1, in, keep(c3.cv1.get()));
  for (Bottleneck b : c3.bottlenecks) y = cut_bottleneck(*b, y, keep);
  const ChannelSet z = cut_conv(*c3.cv2, in, keep(c3.cv2.get()));
  return cut_conv(*c3.cv3, ChannelSet::concat({y, z}), keep(c3.cv3.get()));
}

ChannelSet cut_c2f(C2fImpl& c, const ChannelSet& in, const KeepMap& keep) {
  const std::array<int64_t, 2> h = c.halves();  // before the cut: the widths as they were
  const ChannelSet y = cut_conv(*c.cv1, in, keep(c.cv1.get()));
  std::vector<ChannelSet> parts{y.slice(0, h[0]), y.slice(h[0], h[1])};
  for (const auto& block : c.blocks) parts.push_back(cut_layer(*block, parts.back(), keep));
  return cut_conv(*c.cv2, ChannelSet::concat(parts), keep(c.cv2.get()));
}

// Only the attention blocks' hidden ffn channels and the first part of cv1 are pruned: the
// attention stream b keeps every channel.
ChannelSet cut_c2psa(C2PSAImpl& c, const ChannelSet& in, const KeepMap& keep) {
  const std::array<int64_t, 2> h = c.halves();
  const ChannelSet y = cut_conv(*c.cv1, in, keep(c.cv1.get()));
  const ChannelSet b = y.slice(h[0], h[1]);
  for (size_t i = 0; i < c.m->size(); ++i) {
    const torch::nn::Sequential& ffn = c.m->ptr(i)->as<PSABlockImpl>()->ffn;
    ConvImpl& hidden = *ffn->ptr(0)->as<ConvImpl>();
    cut_conv(*ffn->ptr(1)->as<ConvImpl>(), cut_conv(hidden, b, keep(&hidden)), torch::Tensor());
  }
  return cut_conv(*c.cv2, ChannelSet::concat({y.slice(0, h[0]), b}), keep(c.cv2.get()));
}

// Cuts one layer's convolutions given its input channels; returns its output channels.
ChannelSet cut_layer(torch::nn::Module& layer, const ChannelSet& in, const KeepMap& keep) {
  if (auto* c = dynamic_cast<ConvImpl*>(&layer)) return cut_conv(*c, in, keep(c));
  if (auto* b = dynamic_cast<BottleneckImpl*>(&layer)) return cut_bottleneck(*b, in, keep);
  if (auto* c3 = dynamic_cast<C3Impl*>(&layer)) return cut_c3(*c3, in, keep);
  if (auto* c2f = dynamic_cast<C2fImpl*>(&layer)) return cut_c2f(*c2f, in, keep);
  if (auto* c2psa = dynamic_cast<C2PSAImpl*>(&layer)) return cut_c2psa(*c2psa, in, keep);
  if (auto* s = dynamic_cast<SPPFImpl*>(&layer)) {
    const ChannelSet a = cut_conv(*s->cv1, in, keep(s->cv1.get()));  // max-pools keep a constant constant
    return cut_conv(*s->cv2, ChannelSet::concat(std::vector<ChannelSet>(s->pools() + 1, a)), keep(s->cv2.get()));
  }
  return in;  // Upsample and Concat
}

// A head branch's steps in order (Conv blocks, nested chains), its biased output convolution last.
ChannelSet cut_branch(ChainImpl& chain, ChannelSet in, const KeepMap& keep) {
  for (const auto& child : chain.children()) {
    if (auto* c = dynamic_cast<ConvImpl*>(child.get())) in = cut_conv(*c, in, keep(c));
    if (auto* nested = dynamic_cast<ChainImpl*>(child.get())) in = cut_branch(*nested, in, keep);
    if (auto* out = dynamic_cast<torch::nn::Conv2dImpl*>(child.get())) {
      cut_inputs(*out, in, nullptr, &out->bias);
      in = ChannelSet::all(out->weight.size(0));
    }
  }
  return in;
}

// Walks the layers in order, cutting each from its sources' output channels, then the head's inputs.
void cut_model(DetectionModelImpl& m, const KeepMap& keep) {
  std::vector<ChannelSet> outputs;
  const auto& layers = m.spec().layers;
  auto input_of = [&](size_t i) {
    std::vector<ChannelSet> parts;
    for (int64_t s : layers[i].sources)
      parts.push_back(s < 0 || static_cast<size_t>(s) + 1 == i ? (i == 0 ? ChannelSet::all(m.spec().ch) : outputs[i - 1]) : outputs[s]);
    return parts.size() == 1 ? parts[0] : ChannelSet::concat(parts);
  };
  for (size_t i = 0; i + 1 < m.num_layers(); ++i) outputs.push_back(cut_layer(*m.layer(i), input_of(i), keep));
  const size_t d = m.num_layers() - 1;
  const auto& sources = layers[d].sources;
  auto& head = dynamic_cast<DetectHeadImpl&>(*m.layer(d));
  auto* dfl = dynamic_cast<DflDetectImpl*>(&head);
  for (size_t level = 0; level < sources.size(); ++level) {
    const ChannelSet& in = outputs[sources[level] < 0 ? d - 1 : sources[level]];
    if (dfl) {
      cut_branch(*dfl->box_branches[level], in, keep);
      cut_branch(*dfl->class_branches[level], in, keep);
    } else {
      torch::nn::Conv2dImpl& conv = *head.output_convs()[level];
      cut_inputs(conv, in, nullptr, &conv.bias);
    }
  }
}

// Each group's |gamma| per channel (the largest over its members), its member count and the summed
// cost of one of its channels.
struct GroupGammas {
  std::vector<torch::Tensor> gamma;  // double, on the CPU
  std::vector<int64_t> members;
  std::vector<double> cost;
};

GroupGammas group_gammas(const std::vector<PrunableConv>& convs) {
  GroupGammas g;
  for (const PrunableConv& p : convs) {
    if (p.group >= g.gamma.size())
      g.gamma.resize(p.group + 1), g.members.resize(p.group + 1, 0), g.cost.resize(p.group + 1, 0.0);
    const torch::Tensor a = p.gamma().detach().abs().cpu().to(torch::kDouble);
    torch::Tensor& s = g.gamma[p.group];
    if (s.defined() && s.numel() != a.numel())
      throw std::runtime_error("prune: " + p.name + " has " + std::to_string(a.numel()) + " channels, its residual group " +
                               std::to_string(s.numel()));
    s = s.defined() ? torch::maximum(s, a) : a;
    ++g.members[p.group];
    g.cost[p.group] += p.channel_cost;
  }
  return g;
}

}  // namespace

namespace {

// Lists a model's prunable convolutions layer by layer, numbering the groups, with each channel's
// cost at the stride the layer works at.
class ConvLister {
 public:
  std::vector<PrunableConv> out;
  double stride = 1;  // input pixels per pixel (along a side) of the layer being listed

  size_t new_group() { return groups_++; }

  // One convolution's output channels first .. first + count - 1 (count 0: all) in `group`.
  void add(const std::string& name, ConvImpl& c, size_t group, int64_t first = 0, int64_t count = 0) {
    const torch::Tensor& w = c.conv->weight;
    const double pixels = 1.0 / (stride * stride);
    out.push_back({name, &c, group, first, count ? count : w.size(0),
                   pixels * (static_cast<double>(w.size(1) * w.size(2) * w.size(3)) + kElementwiseCost)});
  }
  // A Conv block on its own; a depthwise one follows its input and is not listed.
  void conv(const std::string& name, ConvImpl& c) {
    if (c.conv->options.groups() > 1 && !depthwise(c))
      throw std::runtime_error("prune: " + name + " is a grouped convolution (only depthwise ones can follow a pruning)");
    if (!depthwise(c)) add(name, c, new_group());
  }
  // chain: the group of the bottleneck's input, which a residual add joins.
  void bottleneck(const std::string& name, BottleneckImpl& b, size_t chain) {
    conv(name + ".cv1", *b.cv1);
    if (b.adds_input()) add(name + ".cv2", *b.cv2, chain);
    else conv(name + ".cv2", *b.cv2);
  }
  void c3(const std::string& name, C3Impl& c) {
    const size_t chain = new_group();  // cv1 and, through the adds, every bottleneck's cv2
    add(name + ".cv1", *c.cv1, chain);
    for (size_t k = 0; k < c.bottlenecks.size(); ++k) bottleneck(name + ".m." + std::to_string(k), *c.bottlenecks[k], chain);
    conv(name + ".cv2", *c.cv2);
    conv(name + ".cv3", *c.cv3);
  }
  // cv1's first part stands alone; its second is the chain the blocks' adds join (a C3k block's
  // own output does not add).
  void c2f(const std::string& name, C2fImpl& c) {
    const std::array<int64_t, 2> h = c.halves();
    add(name + ".cv1[0]", *c.cv1, new_group(), 0, h[0]);
    const size_t chain = new_group();
    add(name + ".cv1[1]", *c.cv1, chain, h[0], h[1]);
    for (size_t k = 0; k < c.blocks.size(); ++k) {
      const std::string m = name + ".m." + std::to_string(k);
      if (auto* b = dynamic_cast<BottleneckImpl*>(c.blocks[k].get())) bottleneck(m, *b, chain);
      else c3(m, dynamic_cast<C3Impl&>(*c.blocks[k]));
    }
    conv(name + ".cv2", *c.cv2);
  }
  void c2psa(const std::string& name, C2PSAImpl& c) {
    add(name + ".cv1[0]", *c.cv1, new_group(), 0, c.halves()[0]);
    for (size_t k = 0; k < c.m->size(); ++k)
      conv(name + ".m." + std::to_string(k) + ".ffn.0", *c.m->ptr(k)->as<PSABlockImpl>()->ffn->ptr(0)->as<ConvImpl>());
    conv(name + ".cv2", *c.cv2);
  }
  void sppf(const std::string& name, SPPFImpl& s) {
    if (s.adds_input()) throw std::runtime_error("prune: " + name + " is an SPPF with a shortcut, which pruning does not support");
    conv(name + ".cv1", *s.cv1);
    conv(name + ".cv2", *s.cv2);
  }
  // A head branch's Conv blocks (nested chains included); its output convolution is not pruned.
  void branch(const std::string& name, ChainImpl& chain) {
    for (const auto& child : chain.named_children()) {
      if (auto* c = dynamic_cast<ConvImpl*>(child.value().get())) conv(name + "." + child.key(), *c);
      if (auto* nested = dynamic_cast<ChainImpl*>(child.value().get())) branch(name + "." + child.key(), *nested);
    }
  }

 private:
  size_t groups_ = 0;
};

}  // namespace

std::vector<PrunableConv> prunable_convs(DetectionModelImpl& model) {
  if (model.fused()) throw std::runtime_error("prune: the model is fused (no BatchNorm left to judge channels by)");
  ConvLister list;
  // Each layer's output stride; the convolutions inside a block work at their layer's input stride.
  std::vector<double> stride_of;
  const size_t d = model.num_layers() - 1;
  for (size_t i = 0; i < d; ++i) {
    const auto layer = model.layer(i);
    const std::string name = "model." + std::to_string(i);
    if (!layer_kind(*layer))
      throw std::runtime_error("prune: layer " + std::to_string(i) + " is a kind pruning does not support (Conv, C3, C2f, "
                               "C3k2, C2PSA, SPPF, Upsample, Concat and the Detect heads are)");
    const int64_t source = model.spec().layers[i].sources.front();  // absolute; -1: the image
    list.stride = source < 0 ? 1.0 : stride_of[source];
    if (auto* c = dynamic_cast<ConvImpl*>(layer.get())) {
      list.stride *= static_cast<double>(c->conv->options.stride()->at(0));
      list.conv(name, *c);
    }
    if (auto* u = dynamic_cast<UpsampleImpl*>(layer.get())) list.stride /= u->scale();
    if (auto* c3 = dynamic_cast<C3Impl*>(layer.get())) list.c3(name, *c3);
    if (auto* c2f = dynamic_cast<C2fImpl*>(layer.get())) list.c2f(name, *c2f);
    if (auto* c2psa = dynamic_cast<C2PSAImpl*>(layer.get())) list.c2psa(name, *c2psa);
    if (auto* s = dynamic_cast<SPPFImpl*>(layer.get())) list.sppf(name, *s);
    stride_of.push_back(list.stride);
  }
  // The anchor-free head's box and class branches, each level at its input's stride.
  if (auto* head = dynamic_cast<DflDetectImpl*>(model.layer(d).get())) {
    const auto& sources = model.spec().layers[d].sources;
    const std::string name = "model." + std::to_string(d);
    for (size_t level = 0; level < sources.size(); ++level) {
      list.stride = stride_of[sources[level] < 0 ? d - 1 : sources[level]];
      list.branch(name + ".cv2." + std::to_string(level), *head->box_branches[level]);
      list.branch(name + ".cv3." + std::to_string(level), *head->class_branches[level]);
    }
  }
  return list.out;
}

ChannelChoice choose_channels(const std::vector<PrunableConv>& convs, const PruneOptions& o) {
  const GroupGammas groups = group_gammas(convs);
  const size_t n = groups.gamma.size();
  std::vector<int64_t> group_of, removable, removed(n, 0);
  int64_t channels = 0;
  for (size_t l = 0; l < n; ++l) {
    const int64_t c = groups.gamma[l].numel();
    const auto floor_keep = static_cast<int64_t>(std::ceil((1.0 - o.max_layer_cut) * c - 1e-9));
    removable.push_back(std::max<int64_t>(0, c - std::max<int64_t>(o.min_channels, floor_keep)));
    group_of.insert(group_of.end(), c, static_cast<int64_t>(l));
    channels += c * groups.members[l];
  }
  std::vector<torch::Tensor> rank_keys;
  for (size_t l = 0; l < n; ++l) rank_keys.push_back(groups.gamma[l] / std::pow(groups.cost[l], o.cost_weight));
  const torch::Tensor order = std::get<1>(torch::cat(rank_keys).sort(/*stable=*/true, 0, false)).contiguous();
  const int64_t* idx = order.data_ptr<int64_t>();
  // The smallest |gamma| / cost^cost_weight go first, a group's only while it has more
  // than its floor.
  const auto target = static_cast<int64_t>(o.ratio * static_cast<double>(channels));
  ChannelChoice choice;
  for (int64_t i = 0, cut = 0; i < order.numel() && cut < target; ++i) {
    const int64_t l = group_of[idx[i]];
    if (removed[l] == removable[l]) continue;
    ++removed[l], cut += groups.members[l];
  }
  // Rounding the kept counts up to the multiple gives back a group's largest ranked channels: the
  // threshold is taken after it, from what goes.
  std::vector<torch::Tensor> keep;
  for (size_t l = 0; l < n; ++l) {
    const int64_t c = groups.gamma[l].numel();
    const int64_t k = std::min(c, (c - removed[l] + o.multiple - 1) / o.multiple * o.multiple);
    keep.push_back(std::get<0>(std::get<1>(groups.gamma[l].topk(k)).sort()));
    if (k < c) choice.threshold = std::max(choice.threshold, std::get<0>(groups.gamma[l].kthvalue(c - k)).item<double>());
  }
  for (const PrunableConv& p : convs) choice.keep.push_back(keep[p.group]);
  return choice;
}

PruneResult prune_channels(const DetectionModelImpl& source, const PruneOptions& o) {
  if (o.ratio < 0 || o.ratio >= 1) throw std::invalid_argument("prune: --ratio must be in [0, 1)");
  PruneResult r;
  r.model = source.copy();
  DetectionModelImpl& m = *r.model;
  const std::vector<PrunableConv> convs = prunable_convs(m);
  const ChannelChoice choice = choose_channels(convs, o);
  r.threshold = choice.threshold;
  for (size_t i = 0; i < convs.size(); ++i) {
    const torch::Tensor g = convs[i].gamma().detach().abs();
    r.cuts.push_back({convs[i].name, g.numel(), choice.keep[i].numel(), g.max().item<double>(), g.median().item<double>()});
    r.channels_before += r.cuts.back().before, r.channels_after += r.cuts.back().after;
  }
  cut_model(m, KeepMap(convs, choice));

  std::map<std::string, std::vector<int64_t>> shapes = source.config().pruned_shapes;  // earlier prunings too
  const StateDict before = source.state(), after = m.state();
  for (size_t i = 0; i < after.size(); ++i)
    if (after[i].second.sizes() != before[i].second.sizes()) shapes[after[i].first] = after[i].second.sizes().vec();
  m.set_pruned_shapes(std::move(shapes));
  return r;
}

void recalibrate_batchnorm(DetectionModelImpl& model, const std::function<torch::Tensor()>& next_batch, int batches) {
  std::vector<torch::nn::BatchNorm2dImpl*> bns;
  for (const auto& m : model.modules(/*include_self=*/false))
    if (auto* bn = dynamic_cast<torch::nn::BatchNorm2dImpl*>(m.get())) bns.push_back(bn);
  torch::NoGradGuard no_grad;
  for (auto* bn : bns) {
    bn->reset_running_stats();
    bn->options.momentum(std::nullopt);  // cumulative average
  }
  const bool was_training = model.is_training();
  model.train();
  for (int i = 0; i < batches; ++i) {
    const torch::Tensor x = next_batch();
    if (!x.defined()) break;
    model.forward(x);
  }
  model.train(was_training);
  for (auto* bn : bns) bn->options.momentum(0.03);
}

}  // namespace kestrel
