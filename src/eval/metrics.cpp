// YOLOv5 v7.0 validation metrics: process_batch, ap_per_class, compute_ap, fitness, val.py's
// statistics accumulation, aggregation and results table.
#include "eval/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "eval/boxes.h"
#include "core/numpy_ops.h"

namespace kestrel {

torch::Tensor iou_thresholds() { return torch::linspace(0.5, 0.95, 10, torch::kFloat32); }

namespace {

// One label/detection IoU with box_iou's float32 operations and order.
inline float pair_iou(const float* a, const float* b) {
  const float w = std::max(0.0f, std::min(a[2], b[2]) - std::max(a[0], b[0]));
  const float h = std::max(0.0f, std::min(a[3], b[3]) - std::max(a[1], b[1]));
  const float inter = w * h;
  const float area_a = (a[2] - a[0]) * (a[3] - a[1]);
  const float area_b = (b[2] - b[0]) * (b[3] - b[1]);
  return inter / (area_a + area_b - inter + 1e-7f);
}

struct Match {
  int64_t label, det;
};

}  // namespace

torch::Tensor process_batch(const torch::Tensor& detections, const torch::Tensor& labels,
                            const torch::Tensor& iouv) {
  const auto det = detections.to(torch::kCPU, torch::kFloat32).contiguous();
  const auto lab = labels.to(torch::kCPU, torch::kFloat32).contiguous();
  const auto thr = iouv.to(torch::kCPU, torch::kFloat32).contiguous();
  const int64_t n = det.size(0), m = lab.size(0), nt = thr.size(0);
  auto correct = torch::zeros({n, nt}, torch::kBool);
  if (n == 0 || m == 0) return correct.to(iouv.device());
  const float* d = det.data_ptr<float>();
  const float* l = lab.data_ptr<float>();
  const float* t = thr.data_ptr<float>();
  bool* out = correct.data_ptr<bool>();

  // iou[label][det], zero where the classes differ (such pairs never match).
  std::vector<float> iou(static_cast<size_t>(m * n));
  std::vector<uint8_t> same_class(iou.size());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      iou[i * n + j] = pair_iou(l + i * 5 + 1, d + j * 6);
      same_class[i * n + j] = l[i * 5] == d[j * 6 + 5];
    }

  std::vector<Match> matches;
  std::vector<float> match_iou;
  std::vector<Match> best_per_det;
  std::vector<int64_t> det_taken(n), label_taken(m);
  for (int64_t k = 0; k < nt; ++k) {
    matches.clear();
    match_iou.clear();
    for (int64_t i = 0; i < m; ++i)  // torch.where order: label-major
      for (int64_t j = 0; j < n; ++j)
        if (same_class[i * n + j] && iou[i * n + j] >= t[k]) {
          matches.push_back({i, j});
          match_iou.push_back(iou[i * n + j]);
        }
    if (matches.size() == 1) out[matches[0].det * nt + k] = true;
    if (matches.size() <= 1) continue;
    // matches[argsort(iou)[::-1]], then np.unique on the detection column (first occurrence, output
    // sorted by detection), then np.unique on the label column of that.
    const auto ascending = numpy::argsort_quick(match_iou);
    std::fill(det_taken.begin(), det_taken.end(), 0);
    best_per_det.clear();
    for (auto it = ascending.rbegin(); it != ascending.rend(); ++it) {
      const Match& mt = matches[*it];
      if (det_taken[mt.det]) continue;
      det_taken[mt.det] = 1;
      best_per_det.push_back(mt);
    }
    std::sort(best_per_det.begin(), best_per_det.end(),
              [](const Match& a, const Match& b) { return a.det < b.det; });
    std::fill(label_taken.begin(), label_taken.end(), 0);
    for (const Match& mt : best_per_det) {
      if (label_taken[mt.label]) continue;
      label_taken[mt.label] = 1;
      out[mt.det * nt + k] = true;
    }
  }
  return correct.to(iouv.device());
}

namespace {
// compute_ap's precision envelope over recall, with the sentinels (0, 1) and (1, 0) added, and for
// Ultralytics (last_recall, 0) before the last.
void precision_envelope(const std::vector<double>& recall, const std::vector<double>& precision, PrCurveEnd end,
                        std::vector<double>& mrec, std::vector<double>& mpre) {
  mrec.assign(1, 0.0);
  mrec.insert(mrec.end(), recall.begin(), recall.end());
  mpre.assign(1, 1.0);
  mpre.insert(mpre.end(), precision.begin(), precision.end());
  if (end == PrCurveEnd::at_last_recall) {
    mrec.push_back(recall.empty() ? 1.0 : recall.back());
    mpre.push_back(0.0);
  }
  mrec.push_back(1.0);
  mpre.push_back(0.0);
  for (size_t k = mpre.size() - 1; k-- > 0;) mpre[k] = std::max(mpre[k], mpre[k + 1]);
}
}  // namespace

double compute_ap(const std::vector<double>& recall, const std::vector<double>& precision, PrCurveEnd end) {
  std::vector<double> mrec, mpre;
  precision_envelope(recall, precision, end, mrec, mpre);
  static const std::vector<double> grid = numpy::linspace(0, 1, 101);  // COCO's 101 points
  return numpy::trapz(numpy::interp(grid, mrec, mpre, mpre.front(), mpre.back()), grid);
}


ApPerClass ap_per_class(const std::vector<uint8_t>& tp, int niou, const std::vector<float>& conf,
                        const std::vector<float>& pred_cls, const std::vector<float>& target_cls, PrCurveEnd end) {
  constexpr double eps = 1e-16;
  constexpr size_t kGrid = 1000;
  ApPerClass res;
  res.niou = niou;

  // Sort by confidence, descending (np.argsort(-conf), unstable).
  std::vector<float> neg_conf(conf.size());
  for (size_t i = 0; i < conf.size(); ++i) neg_conf[i] = -conf[i];
  const auto order = numpy::argsort_quick(neg_conf);

  // Unique target classes and their label counts.
  std::vector<float> classes = target_cls;
  std::sort(classes.begin(), classes.end());
  std::vector<float> unique_classes;
  std::vector<int64_t> n_labels;
  for (float c : classes) {
    if (unique_classes.empty() || unique_classes.back() != c) {
      unique_classes.push_back(c);
      n_labels.push_back(0);
    }
    ++n_labels.back();
  }
  const size_t nc = unique_classes.size();
  if (nc == 0) return res;

  // Predictions of each class, in confidence order.
  std::vector<std::vector<int64_t>> members(nc);
  for (int64_t i : order) {
    const auto it = std::lower_bound(unique_classes.begin(), unique_classes.end(), pred_cls[i]);
    if (it != unique_classes.end() && *it == pred_cls[i]) members[it - unique_classes.begin()].push_back(i);
  }

  const auto px = numpy::linspace(0, 1, kGrid);
  std::vector<double> neg_px(kGrid);
  for (size_t k = 0; k < kGrid; ++k) neg_px[k] = -px[k];
  std::vector<std::vector<double>> p(nc, std::vector<double>(kGrid, 0.0));
  std::vector<std::vector<double>> r(nc, std::vector<double>(kGrid, 0.0));
  res.ap.assign(nc * niou, 0.0);
  res.px = px;
  res.pr_curve.assign(nc, std::vector<double>(kGrid, 0.0));

  std::vector<double> xp, recall, precision;
  for (size_t ci = 0; ci < nc; ++ci) {
    const auto& idx = members[ci];
    if (idx.empty()) continue;
    const double n_l = static_cast<double>(n_labels[ci]) + eps;
    xp.resize(idx.size());
    for (size_t k = 0; k < idx.size(); ++k) xp[k] = static_cast<double>(-conf[idx[k]]);
    recall.resize(idx.size());
    precision.resize(idx.size());
    for (int j = 0; j < niou; ++j) {
      int64_t tpc = 0, fpc = 0;  // cumulative TPs and FPs
      for (size_t k = 0; k < idx.size(); ++k) {
        const bool hit = tp[idx[k] * niou + j] != 0;
        tpc += hit;
        fpc += !hit;
        recall[k] = static_cast<double>(tpc) / n_l;
        precision[k] = static_cast<double>(tpc) / static_cast<double>(tpc + fpc);
      }
      if (j == 0) {
        r[ci] = numpy::interp(neg_px, xp, recall, 0.0, recall.back());
        p[ci] = numpy::interp(neg_px, xp, precision, 1.0, precision.back());
        std::vector<double> mrec, mpre;  // the PR curve: the envelope at the recall grid
        precision_envelope(recall, precision, end, mrec, mpre);
        res.pr_curve[ci] = numpy::interp(px, mrec, mpre, mpre.front(), mpre.back());
      }
      res.ap[ci * niou + j] = compute_ap(recall, precision, end);
    }
  }

  // Mean F1 over classes (np.mean over axis 0 accumulates class by class), smoothed, argmax.
  std::vector<double> f1_mean(kGrid, 0.0);
  std::vector<std::vector<double>> f1(nc, std::vector<double>(kGrid));
  for (size_t ci = 0; ci < nc; ++ci)
    for (size_t k = 0; k < kGrid; ++k) {
      f1[ci][k] = 2 * p[ci][k] * r[ci][k] / (p[ci][k] + r[ci][k] + eps);
      f1_mean[k] += f1[ci][k];
    }
  for (double& v : f1_mean) v /= static_cast<double>(nc);
  const auto smoothed = numpy::box_smooth(f1_mean, 0.1);
  const size_t best = std::max_element(smoothed.begin(), smoothed.end()) - smoothed.begin();

  for (size_t ci = 0; ci < nc; ++ci) {
    res.ap_class.push_back(static_cast<int>(unique_classes[ci]));
    res.p.push_back(p[ci][best]);
    res.r.push_back(r[ci][best]);
    res.f1.push_back(f1[ci][best]);
    const double tps = std::nearbyint(r[ci][best] * static_cast<double>(n_labels[ci]));
    res.tp.push_back(tps);
    res.fp.push_back(std::nearbyint(tps / (p[ci][best] + eps) - tps));
  }
  res.p_curve = std::move(p), res.r_curve = std::move(r), res.f1_curve = std::move(f1);
  return res;
}

double fitness(double map50, double map, double map50_weight) { return map50_weight * map50 + (1 - map50_weight) * map; }

ScoringRules scoring_rules(bool ultralytics) {
  if (!ultralytics) return {};
  return {PrCurveEnd::at_last_recall, 0.0, true, true};
}

void ValStats::append(const torch::Tensor& correct_, const torch::Tensor& detections,
                      const torch::Tensor& target_cls_) {
  const auto c = correct_.to(torch::kCPU, torch::kBool).contiguous();
  const auto d = detections.to(torch::kCPU, torch::kFloat32).contiguous();
  const auto t = target_cls_.to(torch::kCPU, torch::kFloat32).contiguous();
  TORCH_CHECK(c.size(0) == d.size(0) && (c.size(0) == 0 || c.size(1) == niou),
              "correct must be [detections, niou]");
  const bool* cp = c.data_ptr<bool>();
  correct.insert(correct.end(), cp, cp + c.numel());
  const float* dp = d.data_ptr<float>();
  for (int64_t i = 0; i < d.size(0); ++i) {
    conf.push_back(dp[i * 6 + 4]);
    pred_cls.push_back(dp[i * 6 + 5]);
  }
  const float* tp = t.data_ptr<float>();
  target_cls.insert(target_cls.end(), tp, tp + t.numel());
}

torch::Tensor ValStats::add_image(const torch::Tensor& pred_in, const torch::Tensor& labels, int img_h,
                         int img_w, const LetterboxInfo& letterbox, const torch::Tensor& iouv,
                         bool single_cls, ConfusionMatrix* confusion) {
  using torch::indexing::Slice;
  ++seen;
  auto pred = pred_in.to(torch::kFloat32);
  const int64_t nl = labels.size(0), npr = pred.size(0);
  auto correct_img = torch::zeros({npr, niou}, torch::kBool);
  if (npr == 0) {
    if (nl) append(correct_img, pred.reshape({0, 6}), labels.select(1, 0));
    if (nl && confusion) confusion->add_missed(labels.select(1, 0));
    count_label_classes(labels.select(1, 0));
    return pred.reshape({0, 6});
  }
  if (single_cls) {
    pred = pred.clone();
    pred.select(1, 5).zero_();
  }
  auto predn = pred.clone();
  scale_boxes(predn, letterbox);
  if (nl) {
    const auto size = torch::tensor({img_w, img_h, img_w, img_h}, torch::kFloat32).to(labels.device());
    auto tbox = xywh2xyxy(labels.index({Slice(), Slice(1, 5)}).to(torch::kFloat32) * size);
    if (!rules.match_in_input_pixels) scale_boxes(tbox, letterbox);
    const auto labelsn = torch::cat({labels.index({Slice(), Slice(0, 1)}).to(torch::kFloat32), tbox}, 1);
    const torch::Tensor& matched = rules.match_in_input_pixels ? pred : predn;
    correct_img = process_batch(matched, labelsn, iouv);
    if (confusion) confusion->process_batch(matched, labelsn);
  }
  append(correct_img, pred, labels.select(1, 0));
  count_label_classes(labels.select(1, 0));
  return predn;
}

void ValStats::count_label_classes(const torch::Tensor& label_cls) {
  const torch::Tensor present = std::get<0>(torch::_unique(label_cls.to(torch::kCPU, torch::kInt64)));
  for (int64_t i = 0; i < present.numel(); ++i) {
    const int64_t c = present[i].item<int64_t>();
    if (c < 0) continue;
    if (c >= static_cast<int64_t>(images_with_class.size())) images_with_class.resize(static_cast<size_t>(c + 1), 0);
    ++images_with_class[static_cast<size_t>(c)];
  }
}

ValMetrics ValStats::compute(int nc) const {
  ValMetrics out;
  out.images = seen;
  out.fitness_map50_weight = rules.fitness_map50_weight;
  std::vector<int64_t> nt(static_cast<size_t>(std::max(nc, 0)), 0);
  for (float c : target_cls) {
    const auto ci = static_cast<int64_t>(c);
    TORCH_CHECK(ci >= 0, "negative label class ", c);
    if (ci >= static_cast<int64_t>(nt.size())) nt.resize(ci + 1, 0);
    ++nt[ci];
  }
  for (int64_t v : nt) out.instances += v;

  const bool any_correct = std::any_of(correct.begin(), correct.end(), [](uint8_t v) { return v; });
  if (any_correct) {
    const auto res = ap_per_class(correct, niou, conf, pred_cls, target_cls, rules.curve_end);
    std::vector<double> ap50(res.ap_class.size()), ap(res.ap_class.size());
    for (size_t i = 0; i < res.ap_class.size(); ++i) {
      ap50[i] = res.ap_at(i, 0);
      ap[i] = numpy::sum(res.ap.data() + i * res.niou, res.niou) / res.niou;
    }
    out.mp = numpy::mean(res.p);
    out.mr = numpy::mean(res.r);
    out.map50 = numpy::mean(ap50);
    out.map = numpy::mean(ap);
    for (size_t i = 0; i < res.ap_class.size(); ++i) {
      const int c = res.ap_class[i];
      const int64_t images = !rules.images_per_class ? seen
                             : c < static_cast<int>(images_with_class.size()) ? images_with_class[c] : 0;
      out.classes.push_back({c, images, nt[c], res.p[i], res.r[i], ap50[i], ap[i]});
    }
    out.maps.assign(static_cast<size_t>(std::max(nc, 0)), out.map);
    for (size_t i = 0; i < res.ap_class.size(); ++i)
      if (res.ap_class[i] < nc) out.maps[res.ap_class[i]] = ap[i];
  } else {
    out.maps.assign(static_cast<size_t>(std::max(nc, 0)), 0.0);
  }
  return out;
}

std::string format_val_table(const ValMetrics& metrics, const std::vector<std::string>& names,
                             bool per_class) {
  char line[256];
  std::string out;
  std::snprintf(line, sizeof line, "%22s%11s%11s%11s%11s%11s%11s\n", "Class", "Images", "Instances",
                "P", "R", "mAP50", "mAP50-95");
  out += line;
  auto row = [&](const std::string& name, int64_t images, int64_t instances, double p, double r,
                 double ap50, double ap) {
    std::snprintf(line, sizeof line, "%22s%11lld%11lld%11.3g%11.3g%11.3g%11.3g\n", name.c_str(),
                  static_cast<long long>(images), static_cast<long long>(instances), p, r, ap50, ap);
    out += line;
  };
  row("all", metrics.images, metrics.instances, metrics.mp, metrics.mr, metrics.map50, metrics.map);
  if (per_class)
    for (const auto& c : metrics.classes)
      row(c.cls >= 0 && static_cast<size_t>(c.cls) < names.size() ? names[c.cls] : std::to_string(c.cls),
          c.images, c.instances, c.p, c.r, c.ap50, c.ap);
  return out;
}

}  // namespace kestrel
