// BN-sparsity training (see sparsity.h).
#include "train/sparsity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/float_text.h"
#include "report/line_chart.h"

namespace kestrel {

namespace {
// Histogram bins of log10 |gamma|: 0.2 decades from 1e-4 to 10 (what is below falls in the first).
constexpr double kLogLo = -4.0, kLogHi = 1.0, kBinWidth = 0.2;
constexpr int kBins = static_cast<int>((kLogHi - kLogLo) / kBinWidth + 0.5);
}  // namespace

PruneOptions sparsity_target_of(const TrainOptions& o) {
  PruneOptions p;
  p.ratio = o.sparsity_target, p.cost_weight = o.sparsity_cost_weight, p.multiple = o.sparsity_multiple;
  return p;
}

std::string prune_flags(const PruneOptions& p) {
  char text[160];
  std::snprintf(text, sizeof text, "--ratio %g --min-channels %d --max-layer-cut %g --multiple %d", p.ratio,
                p.min_channels, p.max_layer_cut, p.multiple);
  return std::string(text) + (p.cost_weight > 0 ? " --cost-weight " + shortest_decimal(p.cost_weight) : "");
}

SparsityTraining::SparsityTraining(DetectionModelImpl& model, double strength, bool decay, int epochs, const PruneOptions& target)
    : convs_(prunable_convs(model)), target_(target), strength_(strength), decay_(decay), epochs_(std::max(1, epochs)) {}

std::vector<torch::Tensor> SparsityTraining::target_masks() const {
  const ChannelChoice choice = choose_channels(convs_, target_);
  std::vector<torch::Tensor> masks;
  for (size_t i = 0; i < convs_.size(); ++i)
    masks.push_back(torch::ones({convs_[i].count}, torch::kBool).index_fill_(0, choice.keep[i], false));
  return masks;
}

torch::Tensor SparsityTraining::target_gammas() const {
  const std::vector<torch::Tensor> masks = target_masks();
  std::vector<torch::Tensor> removed;
  for (size_t i = 0; i < convs_.size(); ++i)
    removed.push_back(convs_[i].gamma().detach().abs().cpu().to(torch::kDouble).masked_select(masks[i]));
  return torch::cat(removed);
}

double SparsityTraining::start_epoch() {
  if (target_.ratio <= 0) return 1.0;
  masks_.clear();
  int64_t penalized = 0, all = 0;
  const std::vector<torch::Tensor> masks = target_masks();
  for (size_t i = 0; i < masks.size(); ++i) {
    penalized += masks[i].sum().item<int64_t>(), all += masks[i].numel();
    masks_.push_back(masks[i].to(convs_[i].conv->bn->weight.options()));  // 1 / 0 in the gradient's dtype and device
  }
  return static_cast<double>(penalized) / std::max<int64_t>(1, all);
}

double SparsityTraining::strength_at(int epoch) const {
  return decay_ ? strength_ * (1.0 - 0.9 * epoch / epochs_) : strength_;
}

void SparsityTraining::add_penalty(int epoch, double grad_scale) {
  torch::NoGradGuard no_grad;
  const double s = strength_at(epoch) * grad_scale;
  for (size_t i = 0; i < convs_.size(); ++i) {
    const PrunableConv& p = convs_[i];
    torch::Tensor& weight = p.conv->bn->weight;
    if (!weight.grad().defined()) continue;  // frozen
    const torch::Tensor grad = p.channels(weight.mutable_grad()), sign = torch::sign(p.gamma());
    if (masks_.empty())
      grad.add_(sign, s);
    else
      grad.addcmul_(sign, masks_[i], s);
  }
}

void SparsityTraining::keep_batch(const torch::Tensor& images, int i, int nb) {
  if (i < nb - kCalibrationBatches) return;
  if (i == std::max(0, nb - kCalibrationBatches)) kept_.clear();  // an epoch that was not validated
  torch::NoGradGuard no_grad;
  kept_.push_back(images.detach().mul(255).round_().to(torch::kUInt8));  // exact for images made of uint8 / 255
}

int SparsityTraining::recalibrate(DetectionModelImpl& model, Precision precision, const torch::Device& device) {
  const int n = static_cast<int>(kept_.size());
  if (n == 0) return 0;  // nothing to estimate from: the statistics stay
  size_t next = 0;
  Autocast autocast(precision, device);  // the statistics of the activations training sees
  recalibrate_batchnorm(model, [&] {
    return next == kept_.size() ? torch::Tensor() : kept_[next++].to(torch::kFloat32).div_(255);
  }, n);
  kept_.clear();
  return n;
}

double SparsityTraining::share_below(double threshold) const {
  int64_t below = 0, all = 0;
  for (const PrunableConv& p : convs_) {
    const torch::Tensor g = p.gamma();
    below += (g.detach().abs() < threshold).sum().item<int64_t>();
    all += g.numel();
  }
  return all ? static_cast<double>(below) / all : 0;
}

double SparsityTraining::reach(TrainSchedule schedule, int epochs, int batches_per_epoch) const {
  double total = 0;
  for (int e = 0; e < epochs; ++e)
    for (int i = 0; i < batches_per_epoch; ++i) {
      const TrainSchedule::Step s = schedule.batch(e, i);
      if (s.optimizer_step) total += strength_at(e) * s.lr[2] / (1.0 - s.momentum[2]);  // [2]: the BatchNorm weights
    }
  return total;
}

std::string SparsityTraining::reach_report(double reach) const {
  if (target_.ratio <= 0 || convs_.empty()) return "";
  const torch::Tensor g = target_gammas();
  if (g.numel() == 0) return "";
  const double beyond = (g > reach).to(torch::kDouble).mean().item<double>();
  char text[512];
  std::snprintf(text, sizeof text, "BN sparsity: this run can lower a |gamma| by %.3g at most (S x lr / (1 - momentum) "
                "over its optimizer steps); %.0f%% of the channels the target removes have a larger |gamma| now",
                reach, 100 * beyond);
  std::string line = text;
  if (beyond > 1 - kReachedShare) {
    const double needed = torch::quantile(g, kReachedShare).item<double>();
    std::snprintf(text, sizeof text, " and would stay live: train more epochs, or with --sparsity %.2g at the least to reach nine in ten",
                  strength_ * needed / reach);
    line += text;
  }
  return line;
}

std::string SparsityTraining::target_report(int epochs, int batches_per_epoch) const {
  if (target_.ratio <= 0 || convs_.empty()) return "";
  const torch::Tensor g = target_gammas();
  const int64_t removed = g.numel(), below = (g < kGammaThreshold).sum().item<int64_t>();
  const double largest = removed ? g.max().item<double>() : 0.0;
  char text[512];
  std::snprintf(text, sizeof text, "BN sparsity: %lld of the %lld channels `kestrel prune %s` removes have |gamma| < %g (largest %.3g)",
                static_cast<long long>(below), static_cast<long long>(removed), prune_flags(target_).c_str(),
                kGammaThreshold, largest);
  std::string line = text;
  if (below < kReachedShare * removed) {
    std::snprintf(text, sizeof text, "; the rest still carry signal, so the prune will cost accuracy that the fine-tune "
                  "must win back, and this run had %d epochs of %d batches: train more epochs or with a larger --sparsity",
                  epochs, batches_per_epoch);
    line += text;
  }
  return line;
}

void SparsityTraining::record_epoch(int epoch) {
  std::vector<double> bins(kBins, 0.0);
  int64_t all = 0;
  for (const PrunableConv& p : convs_) {
    const torch::Tensor a = p.gamma().detach().abs().to(torch::kDouble).cpu().contiguous();
    const double* v = a.data_ptr<double>();
    for (int64_t i = 0; i < a.numel(); ++i) {
      const double l = v[i] > 0 ? std::log10(v[i]) : kLogLo;
      bins[std::clamp(static_cast<int>((l - kLogLo) / kBinWidth), 0, kBins - 1)] += 1;
    }
    all += a.numel();
  }
  for (double& b : bins) b = 100.0 * b / std::max<int64_t>(1, all);
  histograms_.emplace_back(epoch, std::move(bins));
}

void SparsityTraining::write_plot(const std::string& path) const {
  if (histograms_.empty()) return;
  LineChart c;
  c.title = "BatchNorm |gamma| of the prunable channels during sparsity training";
  c.x_label = "|gamma| (log scale; the leftmost point also counts every |gamma| below 1e-4)";
  c.y_label = "% of channels per 0.2 decade";
  c.log_x = true;
  c.x_range = {std::pow(10.0, kLogLo), std::pow(10.0, kLogHi)};
  c.legend_outside = true, c.width = 670;  // 900 px in all; inside, the legend hid the tallest peak
  const size_t n = histograms_.size();
  std::vector<size_t> shown = {0};  // first, quarters, last
  for (size_t q = 1; q <= 4; ++q) {
    const size_t i = (n - 1) * q / 4;
    if (i != shown.back()) shown.push_back(i);
  }
  for (size_t i : shown) {
    ChartSeries s;
    s.name = "epoch " + std::to_string(histograms_[i].first);
    for (int b = 0; b < kBins; ++b)
      s.points.emplace_back(std::pow(10.0, kLogLo + (b + 0.5) * kBinWidth), histograms_[i].second[b]);
    c.series.push_back(std::move(s));
  }
  // The y axis up to a round height, so that its ticks (quarters) are round numbers too.
  double top = 0;
  for (size_t i : shown) top = std::max(top, *std::max_element(histograms_[i].second.begin(), histograms_[i].second.end()));
  const double tops[] = {4, 8, 20, 40, 60, 80, 100};
  c.y_range = {0.0, *std::find_if(std::begin(tops), std::end(tops) - 1, [&](double t) { return t >= top; })};
  write_line_chart(c, path);
}

}  // namespace kestrel
