// Channel pruning (see channel_prune.h): choose the channels, then walk the layers cutting each
// convolution's outputs and its consumers' inputs.
#include "model/channel_prune.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

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
  if (dynamic_cast<const SPPFImpl*>(&m)) return "SPPF";
  if (dynamic_cast<const UpsampleImpl*>(&m)) return "Upsample";
  if (dynamic_cast<const ConcatImpl*>(&m)) return "Concat";
  if (dynamic_cast<const DetectImpl*>(&m)) return "Detect";
  return nullptr;
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
}

// Cuts one Conv block: inputs to `in`, outputs to `keep` (all when undefined). Returns its output set.
ChannelSet cut_conv(ConvImpl& c, const ChannelSet& in, const torch::Tensor& keep) {
  torch::NoGradGuard no_grad;
  cut_inputs(*c.conv, in, &c.bn->running_mean, nullptr);
  const int64_t total = c.conv->weight.size(0);
  if (!keep.defined()) return ChannelSet::all(total);
  torch::Tensor mask = torch::ones({total}, torch::kBool);
  mask.index_fill_(0, keep, false);
  ChannelSet out{total, keep, mask.nonzero().flatten(), {}};
  const torch::Tensor beta = c.bn->bias.index_select(0, out.dropped);
  out.dropped_value = (c.has_act() ? torch::silu(beta) : beta).to(torch::kFloat).cpu();
  c.conv->weight.set_data(c.conv->weight.index_select(0, keep).contiguous());
  for (torch::Tensor* t : {&c.bn->weight, &c.bn->bias, &c.bn->running_mean, &c.bn->running_var})
    t->set_data(t->index_select(0, keep).contiguous());
  return out;
}

// The kept output channels of each prunable convolution; a convolution absent keeps them all.
class KeepMap {
 public:
  KeepMap(const std::vector<PrunableConv>& convs, const ChannelChoice& choice) {
    for (size_t i = 0; i < convs.size(); ++i) keep_[convs[i].conv] = choice.keep[i];
  }
  torch::Tensor operator()(const ConvImpl* c) const {
    const auto it = keep_.find(c);
    return it == keep_.end() ? torch::Tensor() : it->second;
  }

 private:
  std::map<const ConvImpl*, torch::Tensor> keep_;
};

// Cuts one layer's convolutions given its input channels; returns its output channels.
ChannelSet cut_layer(torch::nn::Module& layer, const ChannelSet& in, const KeepMap& keep) {
  if (auto* c = dynamic_cast<ConvImpl*>(&layer)) return cut_conv(*c, in, keep(c));
  if (auto* c3 = dynamic_cast<C3Impl*>(&layer)) {
    ChannelSet y = cut_conv(*c3->cv1, in, keep(c3->cv1.get()));
    for (Bottleneck b : c3->bottlenecks) {
      const ChannelSet mid = cut_conv(*b->cv1, y, keep(b->cv1.get()));
      const ChannelSet out = cut_conv(*b->cv2, mid, keep(b->cv2.get()));
      y = b->adds_input() ? y.plus(out) : out;
    }
    const ChannelSet z = cut_conv(*c3->cv2, in, keep(c3->cv2.get()));
    return cut_conv(*c3->cv3, ChannelSet::concat({y, z}), keep(c3->cv3.get()));
  }
  if (auto* s = dynamic_cast<SPPFImpl*>(&layer)) {
    const ChannelSet a = cut_conv(*s->cv1, in, keep(s->cv1.get()));  // max-pools keep a constant constant
    return cut_conv(*s->cv2, ChannelSet::concat({a, a, a, a}), keep(s->cv2.get()));
  }
  return in;  // Upsample and Concat
}

// Walks the layers in order, cutting each from its sources' output channels, then Detect's inputs.
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
  for (size_t level = 0; level < sources.size(); ++level) {
    torch::nn::Conv2dImpl& conv = *m.detect().ptr()->convs[level];
    cut_inputs(conv, outputs[sources[level] < 0 ? d - 1 : sources[level]], nullptr, &conv.bias);
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
    const torch::Tensor a = p.conv->bn->weight.detach().abs().cpu().to(torch::kDouble);
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

std::vector<PrunableConv> prunable_convs(DetectionModelImpl& model) {
  if (model.fused()) throw std::runtime_error("prune: the model is fused (no BatchNorm left to judge channels by)");
  if (model.config().ultralytics)
    throw std::runtime_error(model.config().name + ": channel pruning and --sparsity cover YOLOv5 models; the prune groups of "
                             "YOLOv8/YOLO11 (C2f and C3k2 chains, C2PSA, the DFL head) are not built yet");
  std::vector<PrunableConv> out;
  size_t groups = 0;
  // Each layer's output stride (input pixels per output pixel along a side); the convolutions
  // inside a C3 or SPPF work at their layer's input stride.
  std::vector<double> stride_of;
  double stride = 1;
  auto add = [&](const std::string& name, ConvImpl* c, size_t group) {
    const torch::Tensor& w = c->conv->weight;
    const double pixels = 1.0 / (stride * stride);
    out.push_back({name, c, group, pixels * (static_cast<double>(w.size(1) * w.size(2) * w.size(3)) + kElementwiseCost)});
    groups = std::max(groups, group + 1);
  };
  for (size_t i = 0; i + 1 < model.num_layers(); ++i) {
    const auto layer = model.layer(i);
    const std::string name = "model." + std::to_string(i);
    if (!layer_kind(*layer))
      throw std::runtime_error("prune: layer " + std::to_string(i) + " is a kind pruning does not support (Conv, C3, SPPF, "
                               "Upsample, Concat and Detect are)");
    const int64_t source = model.spec().layers[i].sources.front();  // absolute; -1: the image
    stride = source < 0 ? 1.0 : stride_of[source];
    if (auto* c = dynamic_cast<ConvImpl*>(layer.get())) {
      stride *= static_cast<double>(c->conv->options.stride()->at(0));
      add(name, c, groups);
    }
    if (auto* u = dynamic_cast<UpsampleImpl*>(layer.get())) stride /= u->scale();
    if (auto* c3 = dynamic_cast<C3Impl*>(layer.get())) {
      const size_t chain = groups;  // cv1 and, through the adds, every bottleneck's cv2
      add(name + ".cv1", c3->cv1.get(), chain);
      for (size_t k = 0; k < c3->bottlenecks.size(); ++k) {
        Bottleneck b = c3->bottlenecks[k];  // a handle: its module is not const
        const std::string m = name + ".m." + std::to_string(k);
        add(m + ".cv1", b->cv1.get(), groups);
        add(m + ".cv2", b->cv2.get(), b->adds_input() ? chain : groups);
      }
      add(name + ".cv2", c3->cv2.get(), groups);
      add(name + ".cv3", c3->cv3.get(), groups);
    }
    if (auto* s = dynamic_cast<SPPFImpl*>(layer.get())) {
      add(name + ".cv1", s->cv1.get(), groups);
      add(name + ".cv2", s->cv2.get(), groups);
    }
    stride_of.push_back(stride);
  }
  return out;
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
    const torch::Tensor g = convs[i].conv->bn->weight.detach().abs();
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
