// DetectionModel: builds the layer list from a resolved model spec and runs it; YOLOv5's model
// set-up sequence (stride probe, anchor order, bias priors, BatchNorm settings), fusion, weights.
#include "model/detection_model.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <set>

namespace kestrel {

StateDict::operator std::map<std::string, torch::Tensor>() const {
  return std::map<std::string, torch::Tensor>(begin(), end());
}

torch::Tensor StateDict::find(const std::string& name) const {
  for (const auto& [key, tensor] : *this)
    if (key == name) return tensor;
  return {};
}

DetectionModelImpl::DetectionModelImpl(const ModelConfig& cfg, std::optional<int64_t> nc,
                                       int64_t ch)
    : cfg_(cfg), spec_(resolve_model(cfg, nc, ch)) {
  build();
  apply_pruned_shapes();
  {
    // Strides from a dummy forward: in training mode like YOLOv5 (BatchNorm momentum is still the
    // default 0.1 here, so running_var becomes 0.9 and num_batches_tracked 1); Ultralytics probes
    // in eval mode, which leaves the statistics alone.
    torch::NoGradGuard no_grad;
    constexpr int64_t probe = 256;
    if (spec_.anchor_free) eval();
    const auto raw = forward(torch::zeros({1, spec_.ch, probe, probe}));
    train();
    std::vector<double> strides;
    for (const auto& r : raw) strides.push_back(static_cast<double>(probe) / static_cast<double>(r.size(-2)));
    head_->set_strides(strides);
  }
  head_->initialize_biases();
  configure_batchnorm();
}

void DetectionModelImpl::set_pixel_anchors(const torch::Tensor& pixels) {
  detect();  // YOLOv5 models only
  detect_->set_pixel_anchors(pixels);
}

const Detect& DetectionModelImpl::detect() const {
  if (!detect_)
    throw std::runtime_error(cfg_.name + " has Ultralytics' anchor-free head: this needs a YOLOv5 (anchor) model");
  return detect_;
}

DetectionModelImpl::DetectionModelImpl(Unbuilt, const DetectionModelImpl& like)
    : cfg_(like.cfg_), spec_(like.spec_) {
  build();
  apply_pruned_shapes();
  head_->set_strides(like.stride());
  configure_batchnorm();
}

void DetectionModelImpl::build() {
  model_ = register_module("model", torch::nn::ModuleList());
  const size_t count = spec_.layers.size();
  for (size_t i = 0; i + 1 < count; ++i) {
    layers_.push_back(make_layer(spec_.layers[i]));
    model_->push_back(layers_.back());
  }
  head_ = make_head(spec_.layers.back());
  if (auto anchor_head = std::dynamic_pointer_cast<DetectImpl>(head_)) detect_ = Detect(anchor_head);
  model_->push_back(head_);
  keep_.assign(count, false);
  for (int64_t s : spec_.save) keep_[s] = true;
  for (int64_t c = 0; c < spec_.nc; ++c) names_.push_back(std::to_string(c));
}

// Cuts the tensors a pruning cut to their recorded shapes, keeping the leading part of each freshly
// initialised tensor (ones, zeros or random draws as the layer made them). The head's output
// convolutions keep their own output count: a pruned model fine-tuned on data of another class
// count has other outputs, the pruned inputs all the same.
void DetectionModelImpl::apply_pruned_shapes() {
  if (cfg_.pruned_shapes.empty()) return;
  std::set<const c10::TensorImpl*> head_outputs;
  for (const torch::nn::Conv2d& c : head_->output_convs())
    for (const torch::Tensor& t : {c->weight, c->bias}) head_outputs.insert(t.unsafeGetTensorImpl());
  torch::NoGradGuard no_grad;
  auto cut = [&](const std::string& name, torch::Tensor& t) {
    const auto it = cfg_.pruned_shapes.find(name);
    if (it == cfg_.pruned_shapes.end()) return;
    std::vector<int64_t> shape = it->second;
    if (shape.size() != static_cast<size_t>(t.dim()))
      throw std::runtime_error("pruned shape of " + name + " has " + std::to_string(shape.size()) + " dimensions, the layer " +
                               std::to_string(t.dim()));
    if (head_outputs.count(t.unsafeGetTensorImpl())) shape[0] = t.size(0);
    torch::Tensor v = t;
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (shape[d] > t.size(d)) throw std::runtime_error("pruned shape of " + name + " is larger than the layer");
      v = v.narrow(d, 0, shape[d]);
    }
    t.set_data(v.clone());
  };
  for (auto& p : named_parameters()) cut(p.key(), p.value());
  for (auto& b : named_buffers()) cut(b.key(), b.value());
  for (const auto& m : modules(/*include_self=*/false))
    if (auto* conv = dynamic_cast<torch::nn::Conv2dImpl*>(m.get())) fit_options_to_weight(*conv);
}

// initialize_weights(): every BatchNorm gets eps 1e-3 and momentum 0.03.
void DetectionModelImpl::configure_batchnorm() {
  for (const auto& m : modules(/*include_self=*/false)) {
    if (auto* bn = dynamic_cast<torch::nn::BatchNorm2dImpl*>(m.get())) {
      bn->options.eps(1e-3);
      bn->options.momentum(0.03);
    }
  }
}

std::vector<torch::Tensor> DetectionModelImpl::forward(torch::Tensor x) {
  std::vector<torch::Tensor> saved(layers_.size());
  std::vector<torch::Tensor> gathered;
  const auto input_of = [&](int64_t src, size_t i) -> const torch::Tensor& {
    return src < 0 || static_cast<size_t>(src) + 1 == i ? x : saved[src];
  };
  for (size_t i = 0; i < layers_.size(); ++i) {
    const auto& sources = spec_.layers[i].sources;
    if (sources.size() == 1) {
      x = layers_[i]->run(input_of(sources[0], i));
    } else {
      gathered.clear();
      for (int64_t s : sources) gathered.push_back(input_of(s, i));
      x = layers_[i]->run(gathered);
    }
    if (keep_[i]) saved[i] = x;
  }
  gathered.clear();
  for (int64_t s : spec_.layers.back().sources) gathered.push_back(input_of(s, layers_.size()));
  return head_->forward(gathered);
}

torch::Tensor DetectionModelImpl::decode(const std::vector<torch::Tensor>& raw) const {
  return head_->decode(raw);
}

torch::Tensor DetectionModelImpl::stride_tensor() const {
  const auto& s = stride();
  return torch::tensor(std::vector<float>(s.begin(), s.end()));
}

void DetectionModelImpl::set_names(std::vector<std::string> names) {
  if (static_cast<int64_t>(names.size()) != spec_.nc)
    throw std::invalid_argument("a " + std::to_string(spec_.nc) + "-class model cannot take " +
                                std::to_string(names.size()) + " class names");
  names_ = std::move(names);
}

void DetectionModelImpl::fuse() {
  for (const auto& m : modules(/*include_self=*/false))
    if (auto* conv = dynamic_cast<ConvImpl*>(m.get())) conv->fuse();
  fused_ = true;
}

void DetectionModelImpl::set_memory_format(torch::MemoryFormat format) {
  torch::NoGradGuard no_grad;
  for (auto& p : parameters()) {
    if (p.dim() != 4) continue;
    p.set_data(p.data().contiguous(format));
    if (p.grad().defined()) p.mutable_grad() = p.grad().contiguous(format);
  }
}

namespace {

void collect_state(const torch::nn::Module& m, const std::string& prefix, StateDict& out) {
  for (const auto& p : m.named_parameters(/*recurse=*/false))
    out.emplace_back(prefix + p.key(), p.value().detach());
  for (const auto& b : m.named_buffers(/*recurse=*/false))
    out.emplace_back(prefix + b.key(), b.value().detach());
  for (const auto& c : m.named_children()) collect_state(*c.value(), prefix + c.key() + ".", out);
}

}  // namespace

StateDict DetectionModelImpl::state() const {
  StateDict out;
  collect_state(*this, "", out);
  return out;
}

size_t DetectionModelImpl::load_matching(const std::map<std::string, torch::Tensor>& src,
                                         const std::vector<std::string>& exclude) {
  torch::NoGradGuard no_grad;
  size_t transferred = 0;
  for (auto& [name, tensor] : state()) {
    const bool excluded = std::any_of(exclude.begin(), exclude.end(),
                                      [&](const std::string& e) { return name.find(e) != std::string::npos; });
    const auto it = excluded ? src.end() : src.find(name);
    if (it == src.end() || it->second.sizes() != tensor.sizes()) continue;
    tensor.copy_(it->second);
    ++transferred;
  }
  return transferred;
}

std::shared_ptr<DetectionModelImpl> DetectionModelImpl::copy() const {
  // Building draws default initial weights; put the random stream back afterwards so that a
  // copy (e.g. for EMA) leaves the run's stream as YOLOv5's deepcopy does.
  auto gen = at::detail::getDefaultCPUGenerator();
  torch::Tensor rng_state;
  {
    std::lock_guard<std::mutex> lock(gen.mutex());
    rng_state = gen.get_state();
  }
  auto out = std::shared_ptr<DetectionModelImpl>(new DetectionModelImpl(Unbuilt{}, *this));
  if (fused_) out->fuse();
  {
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(rng_state);
  }
  // Weights are fp32 in every mode (autocast casts per op): the copy moves, never casts. Module::to
  // with a dtype would turn BatchNorm's int64 num_batches_tracked into a float in LibTorch 2.x.
  out->to(parameters().front().device());
  torch::NoGradGuard no_grad;
  const StateDict mine = state();
  const StateDict theirs = out->state();
  for (size_t i = 0; i < mine.size(); ++i) theirs[i].second.copy_(mine[i].second);
  const auto my_params = parameters();
  const auto their_params = out->parameters();
  for (size_t i = 0; i < my_params.size(); ++i)
    their_params[i].set_requires_grad(my_params[i].requires_grad());
  out->train(is_training());
  out->names_ = names_;
  return out;
}

}  // namespace kestrel
