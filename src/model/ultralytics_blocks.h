// The blocks Ultralytics' YOLOv8 and YOLO11 add to YOLOv5's (ultralytics/nn/modules/block.py at the
// pinned version): C2f and C3k2 (one module, its blocks differ), and C2PSA with its attention
// block. Submodule names follow Ultralytics' attributes, so state-dict keys match one for one.
#pragma once
#include <array>

#include "model/layers.h"

namespace kestrel {

// cv1 splits into two halves of c channels; each of n blocks reads the last output; cv2 joins all
// 2 + n of them: cv2(cat(a, b, m0(b), m1(m0(b)), ...)).
class C2fImpl : public LayerImpl {
 public:
  explicit C2fImpl(const C2fArgs& args);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor run(torch::ArrayRef<torch::Tensor> in) override { return forward(in[0]); }
  // The widths of cv1's two parts (a, b): c each as built; a pruning cuts each on its own, and b
  // is what the first block takes.
  std::array<int64_t, 2> halves() const;

  Conv cv1{nullptr}, cv2{nullptr};
  torch::nn::ModuleList m{nullptr};
  std::vector<std::shared_ptr<LayerImpl>> blocks;  // Bottleneck or C3k (a C3)
  int64_t c = 0;                                   // hidden channels of each half
};
TORCH_MODULE(C2f);

// Multi-head self-attention over the pixels of a feature map, with a depthwise positional conv
// on the values: proj(v @ softmax(q^T k / sqrt(key_dim))^T + pe(v)).
class AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(int64_t dim, int64_t num_heads, double attn_ratio);
  torch::Tensor forward(const torch::Tensor& x);

  Conv qkv{nullptr}, proj{nullptr}, pe{nullptr};
  int64_t num_heads, head_dim, key_dim;
  double scale;
};
TORCH_MODULE(Attention);

// x + attn(x), then + ffn(x) (two 1x1 convs, the second unactivated).
class PSABlockImpl : public torch::nn::Module {
 public:
  PSABlockImpl(int64_t c, double attn_ratio, int64_t num_heads);
  torch::Tensor forward(torch::Tensor x);

  Attention attn{nullptr};
  torch::nn::Sequential ffn{nullptr};
};
TORCH_MODULE(PSABlock);

// cv1 splits into a and b; b goes through n PSABlocks; cv2(cat(a, b)).
class C2PSAImpl : public LayerImpl {
 public:
  explicit C2PSAImpl(const C2PSAArgs& args);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor run(torch::ArrayRef<torch::Tensor> in) override { return forward(in[0]); }
  // The widths of cv1's two parts (a, b): b is the attention blocks' c, a what a pruning left of c.
  std::array<int64_t, 2> halves() const { return {cv1->conv->weight.size(0) - c, c}; }

  Conv cv1{nullptr}, cv2{nullptr};
  torch::nn::Sequential m{nullptr};
  int64_t c = 0;
};
TORCH_MODULE(C2PSA);

}  // namespace kestrel
