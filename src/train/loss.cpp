// YOLOv5 v7.0 ComputeLoss (utils/loss.py): build_targets and the three loss terms, vectorised
// over all assigned entries of a level. Operation order mirrors YOLOv5 so float32 results and
// gradients agree with the reference vectors.
#include "train/loss.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "eval/bbox_iou.h"

namespace kestrel {

namespace {

constexpr double kNeighbourBias = 0.5;  // a target also claims a neighbour cell within 0.5 of it
constexpr double kFocalAlpha = 0.25;

// Reads a level's assigned rows [k, no] and its objectness channel [bs, na, ny, nx]. Plain
// autograd would give each read its own zero-filled gradient of the level's full size and then
// add them; this node writes both into one buffer, which matters at 640 px (~100 MB per level).
struct GatherLevel : torch::autograd::Function<GatherLevel> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const torch::Tensor& pi, const torch::Tensor& cell) {
    ctx->save_for_backward({cell});
    ctx->saved_data["sizes"] = pi.sizes().vec();
    return {pi.reshape({-1, pi.size(4)}).index_select(0, cell), pi.select(4, 4).contiguous()};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto cell = ctx->get_saved_variables()[0];
    const auto sizes = ctx->saved_data["sizes"].toIntVector();
    auto grad = torch::zeros(sizes, grads[1].options());
    grad.select(4, 4).copy_(grads[1]);
    grad.view({-1, sizes[4]}).index_add_(0, cell, grads[0]);
    return {grad, torch::Tensor()};
  }
};

}  // namespace

std::vector<double> default_balance(int nl) {
  if (nl == 3) return {4.0, 1.0, 0.4};
  return {4.0, 1.0, 0.25, 0.06, 0.02};  // P3-P7
}

LossConfig loss_config_from_hyp(const Hyp& hyp, int nc, int nl, int imgsz, torch::Tensor anchors) {
  LossConfig c;
  c.nc = nc;
  c.nl = nl;
  c.na = anchors.dim() == 3 ? static_cast<int>(anchors.size(1)) : 0;
  c.anchors = std::move(anchors);
  // Same expression order as train.py, so the doubles are bit-identical.
  c.box = hyp.box * (3.0 / nl);
  c.cls = hyp.cls * (static_cast<double>(nc) / 80 * 3 / nl);
  c.obj = hyp.obj * (std::pow(imgsz / 640.0, 2) * 3 / nl);
  c.cls_pw = hyp.cls_pw;
  c.obj_pw = hyp.obj_pw;
  c.anchor_t = hyp.anchor_t;
  c.label_smoothing = hyp.label_smoothing;
  c.fl_gamma = hyp.fl_gamma;
  c.balance = default_balance(nl);
  return c;
}

YoloLoss::YoloLoss(LossConfig config) : config_(std::move(config)) {
  const auto& c = config_;
  if (!c.anchors.defined() || c.anchors.dim() != 3 || c.anchors.size(0) != c.nl ||
      c.anchors.size(1) != c.na || c.anchors.size(2) != 2)
    throw std::invalid_argument("YoloLoss: anchors must be [nl, na, 2] = [" + std::to_string(c.nl) +
                                ", " + std::to_string(c.na) + ", 2]");
  if (config_.balance.empty()) config_.balance = default_balance(c.nl);
  if (static_cast<int>(config_.balance.size()) < c.nl)
    throw std::invalid_argument("YoloLoss: balance needs one weight per level");
  config_.anchors = c.anchors.to(torch::kFloat32).contiguous();
  const auto opts = config_.anchors.options();
  cp_ = 1.0 - 0.5 * c.label_smoothing;
  cn_ = 0.5 * c.label_smoothing;
  cls_pos_weight_ = torch::full({1}, c.cls_pw, opts);
  obj_pos_weight_ = torch::full({1}, c.obj_pw, opts);
  neighbour_offsets_ =
      torch::tensor({0.f, 0.f, 1.f, 0.f, 0.f, 1.f, -1.f, 0.f, 0.f, -1.f}).view({5, 2}).to(opts) *
      kNeighbourBias;
}

std::vector<LevelTargets> YoloLoss::build_targets(const std::vector<torch::Tensor>& p,
                                                  const torch::Tensor& targets) const {
  const int64_t na = config_.na;
  const auto opts = config_.anchors.options();
  const auto tg = targets.to(opts);
  const int64_t nt = tg.size(0);

  // [na, nt, 7]: every target once per anchor, the anchor index appended.
  const auto anchor_index = torch::arange(na, opts).view({na, 1, 1}).expand({na, nt, 1});
  const auto per_anchor = torch::cat({tg.unsqueeze(0).expand({na, nt, 6}), anchor_index}, 2);

  std::vector<LevelTargets> out(config_.nl);
  for (int i = 0; i < config_.nl; ++i) {
    const int64_t ny = p[i].size(2), nx = p[i].size(3);
    const auto gain = torch::tensor({1.f, 1.f, float(nx), float(ny), float(nx), float(ny), 1.f}).to(opts);
    const auto anchors = config_.anchors[i];  // [na, 2]
    auto t = per_anchor * gain;               // normalized -> grid units

    // Anchor match: both size ratios within anchor_t (strict), in either direction.
    const auto r = t.slice(2, 4, 6) / anchors.unsqueeze(1);
    const auto matched = torch::maximum(r, r.reciprocal()).amax(2) < config_.anchor_t;
    t = t.index({matched});  // [m, 7]

    // Neighbour cells: left/up when the centre sits in the cell's low half (and not in the first
    // cell), right/down symmetrically measured from the far edge. All comparisons strict.
    const auto gxy = t.slice(1, 2, 4);
    const auto gxy_inverse = gain.slice(0, 2, 4) - gxy;
    const auto low = (torch::remainder(gxy, 1) < kNeighbourBias) & (gxy > 1);
    const auto high = (torch::remainder(gxy_inverse, 1) < kNeighbourBias) & (gxy_inverse > 1);
    const int64_t m = t.size(0);
    const auto take = torch::cat({torch::ones({1, m}, low.options()), low.t(), high.t()}, 0);  // [5, m]
    t = t.unsqueeze(0).expand({5, m, 7}).index({take});
    const auto offsets = neighbour_offsets_.unsqueeze(1).expand({5, m, 2}).index({take});

    LevelTargets& lt = out[i];
    const auto cell_xy = t.slice(1, 2, 4);
    auto gij = (cell_xy - offsets).to(torch::kLong);
    // Clamp in place before tbox, as YOLOv5 does through views: a target on the far border keeps
    // the last cell and gets an offset of 1.0.
    gij.select(1, 0).clamp_(0, nx - 1);
    gij.select(1, 1).clamp_(0, ny - 1);
    lt.b = t.select(1, 0).to(torch::kLong);
    lt.tcls = t.select(1, 1).to(torch::kLong);
    lt.a = t.select(1, 6).to(torch::kLong);
    lt.gi = gij.select(1, 0);
    lt.gj = gij.select(1, 1);
    lt.tbox = torch::cat({cell_xy - gij, t.slice(1, 4, 6)}, 1);
    lt.anch = anchors.index_select(0, lt.a);
  }
  return out;
}

torch::Tensor YoloLoss::bce_mean(const torch::Tensor& logits, const torch::Tensor& target,
                                 const torch::Tensor& pos_weight) const {
  if (config_.fl_gamma <= 0)
    return torch::binary_cross_entropy_with_logits(logits, target, {}, pos_weight,
                                                   at::Reduction::Mean);
  // Focal loss (YOLOv5 FocalLoss, TF-addons form) on top of the per-element BCE.
  auto loss = torch::binary_cross_entropy_with_logits(logits, target, {}, pos_weight,
                                                      at::Reduction::None);
  const auto prob = torch::sigmoid(logits);
  const auto p_t = target * prob + (1 - target) * (1 - prob);
  const auto alpha_factor = target * kFocalAlpha + (1 - target) * (1 - kFocalAlpha);
  const auto modulating_factor = (1.0 - p_t).pow(config_.fl_gamma);
  return (loss * (alpha_factor * modulating_factor)).mean();
}

std::pair<torch::Tensor, torch::Tensor> YoloLoss::operator()(const std::vector<torch::Tensor>& p,
                                                             const torch::Tensor& targets,
                                                             LossBreakdown* breakdown) const {
  const int64_t na = config_.na;
  const auto levels = build_targets(p, targets);
  const auto opts = p[0].options().requires_grad(false);
  auto lbox = torch::zeros({1}, opts);
  auto lobj = torch::zeros({1}, opts);
  auto lcls = torch::zeros({1}, opts);
  if (breakdown) {
    breakdown->ciou.assign(config_.nl, torch::empty({0}, opts));
    breakdown->obj_bce_mean.assign(config_.nl, torch::Tensor());
  }

  for (int i = 0; i < config_.nl; ++i) {
    const auto& pi = p[i];
    const int64_t ny = pi.size(2), nx = pi.size(3);
    const LevelTargets& lt = levels[i];
    auto tobj = torch::zeros({pi.size(0), na, ny, nx}, opts);

    const auto cell = ((lt.b * na + lt.a) * ny + lt.gj) * nx + lt.gi;  // flat cell index
    const auto gathered = GatherLevel::apply(pi, cell);
    const auto& ps = gathered[0];  // [k, no] predictions of the assigned entries
    if (cell.size(0) > 0) {
      const auto pxy = ps.slice(1, 0, 2).sigmoid() * 2 - 0.5;
      const auto pwh = (ps.slice(1, 2, 4).sigmoid() * 2).pow(2) * lt.anch;
      const auto iou = bbox_iou(torch::cat({pxy, pwh}, 1), lt.tbox, IouKind::CIoU);
      lbox = lbox + (1.0 - iou).mean();

      const auto iou_target = iou.detach().clamp_min(0);
      tobj.view({-1}).index_put_({cell}, iou_target);  // duplicates: the latest entry wins
      if (breakdown) breakdown->ciou[i] = iou.detach();

      if (config_.nc > 1) {
        const auto pcls = ps.slice(1, 5);
        auto t = torch::full_like(pcls, cn_, opts);
        t.scatter_(1, lt.tcls.unsqueeze(1), cp_);
        lcls = lcls + bce_mean(pcls, t, cls_pos_weight_);
      }
    }

    const auto obji = bce_mean(gathered[1], tobj, obj_pos_weight_);
    lobj = lobj + obji * config_.balance[i];
    if (breakdown) breakdown->obj_bce_mean[i] = obji.detach();
  }

  lbox = lbox * config_.box;
  lobj = lobj * config_.obj;
  lcls = lcls * config_.cls;
  const int64_t bs = p[0].size(0);
  return {(lbox + lobj + lcls) * bs, torch::cat({lbox, lobj, lcls}).detach()};
}

}  // namespace kestrel
