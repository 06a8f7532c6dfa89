// The detection network (YOLOv5's models/yolo.py DetectionModel, Ultralytics' for YOLOv8, YOLO11 and
// YOLOv5u) built from a model yaml: layer list, forward, decoding, stride/anchor setup, Conv+BN
// fusion and state-dict style weight access.
#pragma once
#include <torch/torch.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/layers.h"
#include "model/model_config.h"

namespace kestrel {

// Named tensors in YOLOv5 state_dict order (each module's parameters, then its buffers, then its
// children), detached but sharing storage with the model. Converts to a std::map by name.
class StateDict : public std::vector<std::pair<std::string, torch::Tensor>> {
 public:
  using vector::vector;
  operator std::map<std::string, torch::Tensor>() const;
  // The tensor named `name`, or an undefined tensor.
  torch::Tensor find(const std::string& name) const;
};

class DetectionModelImpl : public torch::nn::Module {
 public:
  // DetectionModel(cfg, ch, nc): builds the layers, finds the strides with a 256x256 forward
  // (YOLOv5's in training mode, which moves the BatchNorm running statistics once; Ultralytics' in
  // eval mode), orders the anchors and converts them to grid units (YOLOv5), sets the head's bias
  // priors, then sets every BatchNorm to eps 1e-3, momentum 0.03. `nc` overrides the yaml's class
  // count; the yaml's 'ch' key, when present, wins over `ch`.
  explicit DetectionModelImpl(const ModelConfig& cfg, std::optional<int64_t> nc = std::nullopt,
                              int64_t ch = 3);

  // Raw per-level head outputs (logits), in training and eval mode alike: YOLOv5's [bs, na, ny,
  // nx, no], the anchor-free head's [bs, 4 x reg_max + nc, ny, nx].
  std::vector<torch::Tensor> forward(torch::Tensor x);
  // Inference output [bs, N, ...]: YOLOv5's xywh in input pixels, sigmoid objectness and class
  // scores, rows ordered level, anchor, gy, gx; the anchor-free head's xywh and class scores.
  torch::Tensor decode(const std::vector<torch::Tensor>& raw) const;

  int64_t nc() const { return spec_.nc; }
  int64_t nl() const { return head_->nl; }
  int64_t na() const { return spec_.na; }
  int64_t no() const { return head_->no; }
  bool anchor_free() const { return spec_.anchor_free; }
  const std::vector<double>& stride() const { return head_->strides(); }
  torch::Tensor stride_tensor() const;  // float32 [nl]
  // The Detect `anchors` buffer [nl, na, 2] in grid units (pixels / stride). YOLOv5 models only.
  torch::Tensor anchors() const { return detect()->anchors; }
  // Replaces the anchors with `pixels` [nl, na, 2] (AutoAnchor), ordered and scaled as at build.
  void set_pixel_anchors(const torch::Tensor& pixels);
  const ModelConfig& config() const { return cfg_; }
  const ModelSpec& spec() const { return spec_; }
  const std::vector<std::string>& names() const { return names_; }
  void set_names(std::vector<std::string> names);

  // The module of layer i ("model.<i>"), the Detect head last.
  std::shared_ptr<torch::nn::Module> layer(size_t i) const { return model_->ptr(i); }
  size_t num_layers() const { return model_->size(); }
  const DetectHeadImpl& head() const { return *head_; }
  // YOLOv5's anchor head; throws naming the model for an anchor-free one.
  const Detect& detect() const;

  // Lays the 4-D weights out as `format` (ChannelsLast or Contiguous), in place: parameters keep
  // their identity, so optimizers holding them stay valid. With channels-last weights and input,
  // a CPU eval forward of yolov5n at 640 took 47 ms instead of 180-220 ms here (training about
  // the same).
  void set_memory_format(torch::MemoryFormat format);

  // Records the shapes a pruning gave the tensors (ModelConfig::pruned_shapes), so copies and
  // checkpoints rebuild the pruned architecture.
  void set_pruned_shapes(std::map<std::string, std::vector<int64_t>> shapes) { cfg_.pruned_shapes = std::move(shapes); }

  // BaseModel.fuse(): folds each Conv's BatchNorm into its convolution (for inference).
  void fuse();
  bool fused() const { return fused_; }

  // Copies every tensor of `src` whose name and shape match one of this model's (YOLOv5's
  // intersect_dicts + load_state_dict(strict=False)); names containing one of `exclude` are left
  // alone (train.py excludes "anchor" when the model comes from --cfg). Returns how many were copied.
  size_t load_matching(const std::map<std::string, torch::Tensor>& src, const std::vector<std::string>& exclude = {});
  StateDict state() const;

  // An independent deep copy (same structure, fused state, mode, tensors and names); it does
  // not consume the global random stream.
  std::shared_ptr<DetectionModelImpl> copy() const;

 private:
  struct Unbuilt {};
  DetectionModelImpl(Unbuilt, const DetectionModelImpl& like);
  void build();
  void configure_batchnorm();
  void apply_pruned_shapes();

  ModelConfig cfg_;
  ModelSpec spec_;
  torch::nn::ModuleList model_{nullptr};
  std::vector<std::shared_ptr<LayerImpl>> layers_;  // all but the Detect head
  std::shared_ptr<DetectHeadImpl> head_;
  Detect detect_{nullptr};  // head_ when it is YOLOv5's
  std::vector<bool> keep_;  // layer outputs later layers read (YOLOv5's save list)
  std::vector<std::string> names_;
  bool fused_ = false;
};
TORCH_MODULE(DetectionModel);

}  // namespace kestrel
