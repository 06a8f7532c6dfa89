// Ultralytics' blocks (see ultralytics_blocks.h), constructed in Ultralytics' submodule order so a
// default initialisation draws the random stream in the same order.
#include "model/ultralytics_blocks.h"

#include <cmath>

namespace kestrel {

namespace {

ConvArgs conv(int64_t c1, int64_t c2, int64_t k = 1, int64_t g = 1, bool act = true) {
  ConvArgs a{c1, c2, k, 1};
  a.g = g;
  a.act = act;
  return a;
}

}  // namespace

C2fImpl::C2fImpl(const C2fArgs& a) : c(static_cast<int64_t>(static_cast<double>(a.c2) * a.e)) {
  cv1 = register_module("cv1", Conv(conv(a.c1, 2 * c)));
  cv2 = register_module("cv2", Conv(conv((2 + a.n) * c, a.c2)));
  m = register_module("m", torch::nn::ModuleList());
  for (int64_t i = 0; i < a.n; ++i) {
    switch (a.block) {
      case C2fArgs::Block::c2f: blocks.push_back(std::make_shared<BottleneckImpl>(BottleneckArgs{c, c, a.shortcut, a.g, 1.0, 3, 3})); break;
      case C2fArgs::Block::bottleneck: blocks.push_back(std::make_shared<BottleneckImpl>(BottleneckArgs{c, c, a.shortcut, a.g, 0.5, 3, 3})); break;
      case C2fArgs::Block::c3k: blocks.push_back(std::make_shared<C3Impl>(C3Args{c, c, 2, a.shortcut, a.g, 0.5, 3})); break;
    }
    m->push_back(blocks.back());
  }
}

std::array<int64_t, 2> C2fImpl::halves() const {
  const LayerImpl& first = *blocks.front();
  const auto* bottleneck = dynamic_cast<const BottleneckImpl*>(&first);
  const ConvImpl& entry = bottleneck ? *bottleneck->cv1 : *dynamic_cast<const C3Impl&>(first).cv1;
  const int64_t b = entry.conv->weight.size(1);
  return {cv1->conv->weight.size(0) - b, b};
}

torch::Tensor C2fImpl::forward(const torch::Tensor& x) {
  const std::array<int64_t, 2> h = halves();
  std::vector<torch::Tensor> y = cv1(x).split_with_sizes({h[0], h[1]}, 1);
  for (auto& block : blocks) y.push_back(block->run(y.back()));
  return cv2(torch::cat(y, 1));
}

AttentionImpl::AttentionImpl(int64_t dim, int64_t heads, double attn_ratio)
    : num_heads(heads), head_dim(dim / heads), key_dim(static_cast<int64_t>(static_cast<double>(dim / heads) * attn_ratio)) {
  scale = std::pow(static_cast<double>(key_dim), -0.5);
  const int64_t h = dim + 2 * key_dim * num_heads;
  qkv = register_module("qkv", Conv(conv(dim, h, 1, 1, false)));
  proj = register_module("proj", Conv(conv(dim, dim, 1, 1, false)));
  pe = register_module("pe", Conv(conv(dim, dim, 3, dim, false)));
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x) {
  const int64_t b = x.size(0), ch = x.size(1), h = x.size(2), w = x.size(3), n = h * w;
  const std::vector<torch::Tensor> qkv_parts =
      qkv(x).view({b, num_heads, 2 * key_dim + head_dim, n}).split_with_sizes({key_dim, key_dim, head_dim}, 2);
  const torch::Tensor &q = qkv_parts[0], &k = qkv_parts[1], &v = qkv_parts[2];
  const torch::Tensor attn = torch::matmul((q * scale).transpose(-2, -1), k).softmax(-1);
  const torch::Tensor y = torch::matmul(v, attn.transpose(-2, -1)).view({b, ch, h, w}) + pe(v.reshape({b, ch, h, w}));
  return proj(y);
}

PSABlockImpl::PSABlockImpl(int64_t c, double attn_ratio, int64_t num_heads) {
  attn = register_module("attn", Attention(c, num_heads, attn_ratio));
  ffn = register_module("ffn", torch::nn::Sequential(Conv(conv(c, 2 * c)), Conv(conv(2 * c, c, 1, 1, false))));
}

torch::Tensor PSABlockImpl::forward(torch::Tensor x) {
  x = x + attn(x);
  return x + ffn->forward(x);
}

C2PSAImpl::C2PSAImpl(const C2PSAArgs& a) : c(static_cast<int64_t>(static_cast<double>(a.c1) * a.e)) {
  cv1 = register_module("cv1", Conv(conv(a.c1, 2 * c)));
  cv2 = register_module("cv2", Conv(conv(2 * c, a.c1)));
  m = register_module("m", torch::nn::Sequential());
  for (int64_t i = 0; i < a.n; ++i) m->push_back(PSABlock(c, 0.5, std::max<int64_t>(c / 64, 1)));
}

torch::Tensor C2PSAImpl::forward(const torch::Tensor& x) {
  const std::array<int64_t, 2> h = halves();
  const std::vector<torch::Tensor> ab = cv1(x).split_with_sizes({h[0], h[1]}, 1);
  return cv2(torch::cat({ab[0], m->forward(ab[1])}, 1));
}

}  // namespace kestrel
