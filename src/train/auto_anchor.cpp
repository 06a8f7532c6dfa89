// AutoAnchor (see auto_anchor.h).
#include "train/auto_anchor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

namespace kestrel {

namespace {

// min(r, 1/r) over both sides of label `l` against anchor `a`.
double ratio(const AnchorWH& l, const AnchorWH& a) {
  double x = 1;
  for (int d = 0; d < 2; ++d) {
    const double r = static_cast<double>(l[d]) / a[d];
    x = std::min(x, std::min(r, 1 / r));
  }
  return std::isfinite(x) ? x : 0.0;
}

double best_ratio(const AnchorWH& l, const std::vector<AnchorWH>& anchors) {
  double best = 0;
  for (const AnchorWH& a : anchors) best = std::max(best, ratio(l, a));
  return best;
}

// kmean_anchors' anchor_fitness: mean over labels of best ratio, counting only those past 1/thr.
double fitness(const std::vector<AnchorWH>& wh, const std::vector<AnchorWH>& anchors, double thr) {
  double sum = 0;
  for (const AnchorWH& l : wh) {
    const double b = best_ratio(l, anchors);
    if (b > 1 / thr) sum += b;
  }
  return wh.empty() ? 0 : sum / static_cast<double>(wh.size());
}

// Lloyd's k-means on points (already whitened) from `restarts` random starts of distinct points;
// returns the centroids of the lowest mean distance (scipy.cluster.vq.kmeans' choice). Fewer
// distinct points than k gives an empty result.
std::vector<AnchorWH> kmeans(const std::vector<AnchorWH>& pts, int k, int restarts, std::mt19937_64& rng) {
  std::vector<AnchorWH> best;
  double best_distortion = std::numeric_limits<double>::infinity();
  auto nearest = [&](const AnchorWH& p, const std::vector<AnchorWH>& c, double* d = nullptr) {
    size_t bi = 0;
    double bd = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < c.size(); ++i) {
      const double dd = std::hypot(p[0] - c[i][0], p[1] - c[i][1]);
      if (dd < bd) bd = dd, bi = i;
    }
    if (d) *d = bd;
    return bi;
  };
  for (int run = 0; run < restarts; ++run) {
    std::vector<size_t> idx(pts.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::shuffle(idx.begin(), idx.end(), rng);
    std::vector<AnchorWH> c;
    for (size_t i : idx) {
      if (static_cast<int>(c.size()) == k) break;
      if (std::find(c.begin(), c.end(), pts[i]) == c.end()) c.push_back(pts[i]);
    }
    if (static_cast<int>(c.size()) < k) return {};
    double previous = std::numeric_limits<double>::infinity(), distortion = 0;
    for (int it = 0; it < 300; ++it) {
      std::vector<std::array<double, 3>> acc(k, {0, 0, 0});
      distortion = 0;
      for (const AnchorWH& p : pts) {
        double d = 0;
        auto& a = acc[nearest(p, c, &d)];
        a[0] += p[0], a[1] += p[1], a[2] += 1, distortion += d;
      }
      distortion /= static_cast<double>(pts.size());
      for (int j = 0; j < k; ++j)
        if (acc[j][2] > 0) c[j] = {static_cast<float>(acc[j][0] / acc[j][2]), static_cast<float>(acc[j][1] / acc[j][2])};
      if (previous - distortion <= 1e-5) break;  // scipy's threshold on the change in distortion
      previous = distortion;
    }
    if (distortion < best_distortion) best_distortion = distortion, best = c;
  }
  return best;
}

void sort_by_area(std::vector<AnchorWH>& a) {
  std::stable_sort(a.begin(), a.end(), [](const AnchorWH& x, const AnchorWH& y) { return x[0] * x[1] < y[0] * y[1]; });
}

std::string describe(const std::vector<AnchorWH>& wh, const std::vector<AnchorWH>& k, int img_size, double thr) {
  const AnchorFit fit = anchor_fit(wh, k, thr);
  double all = 0, best = 0, past = 0;
  size_t past_n = 0;
  for (const AnchorWH& l : wh) {
    for (const AnchorWH& a : k) {
      const double x = ratio(l, a);
      all += x;
      if (x > 1 / thr) past += x, ++past_n;
    }
    best += best_ratio(l, k);
  }
  const double n = std::max<double>(1, static_cast<double>(wh.size()));
  char s[400];
  std::snprintf(s, sizeof s,
                "AutoAnchor: thr=%.2f: %.4f best possible recall, %.2f anchors past thr\n"
                "AutoAnchor: n=%zu, img_size=%d, metric_all=%.3f/%.3f-mean/best, past_thr=%.3f-mean: ",
                1 / thr, fit.bpr, fit.aat, k.size(), img_size, all / (n * k.size()), best / n, past_n ? past / past_n : 0.0);
  std::string out = s;
  for (size_t i = 0; i < k.size(); ++i) {
    std::snprintf(s, sizeof s, "%s%ld,%ld", i ? ", " : "", std::lround(k[i][0]), std::lround(k[i][1]));
    out += s;
  }
  return out + "\n";
}

}  // namespace

AnchorFit anchor_fit(const std::vector<AnchorWH>& wh, const std::vector<AnchorWH>& anchors, double thr) {
  AnchorFit f;
  if (wh.empty()) return f;
  double passed = 0, above = 0;
  for (const AnchorWH& l : wh) {
    double best = 0;
    for (const AnchorWH& a : anchors) {
      const double x = ratio(l, a);
      best = std::max(best, x);
      above += x > 1 / thr;
    }
    passed += best > 1 / thr;
  }
  f.bpr = passed / static_cast<double>(wh.size());
  f.aat = above / static_cast<double>(wh.size());
  return f;
}

std::vector<AnchorWH> label_sizes(const std::vector<ImageRecord>& records, int img_size, uint64_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> scale(lo, hi);
  std::vector<AnchorWH> wh;
  for (const ImageRecord& r : records) {
    const double longest = std::max(1, std::max(r.width, r.height));
    const double s = hi > lo ? scale(rng) : lo;
    const double sw = img_size * r.width / longest * s, sh = img_size * r.height / longest * s;
    for (const Label& l : r.labels) wh.push_back({static_cast<float>(l.w * sw), static_cast<float>(l.h * sh)});
  }
  return wh;
}

AnchorEvolution evolve_anchors(const std::vector<ImageRecord>& records, int n, int img_size, double thr,
                               int generations, uint64_t seed) {
  std::mt19937_64 rng(seed);
  AnchorEvolution out;
  const std::vector<AnchorWH> wh0 = label_sizes(records, img_size, seed);
  const size_t tiny = std::count_if(wh0.begin(), wh0.end(), [](const AnchorWH& l) { return l[0] < 3 || l[1] < 3; });
  if (tiny)
    out.report += "AutoAnchor: WARNING Extremely small objects found: " + std::to_string(tiny) + " of " +
                  std::to_string(wh0.size()) + " labels are <3 pixels in size\n";
  std::vector<AnchorWH> wh;
  for (const AnchorWH& l : wh0)
    if (l[0] >= 2 || l[1] >= 2) wh.push_back(l);

  std::vector<AnchorWH> k;
  if (static_cast<int>(wh.size()) >= n) {  // k-means on sizes whitened by their standard deviations
    double mean[2] = {0, 0}, sd[2] = {0, 0};
    for (const AnchorWH& l : wh) mean[0] += l[0], mean[1] += l[1];
    for (double& m : mean) m /= static_cast<double>(wh.size());
    for (const AnchorWH& l : wh) sd[0] += (l[0] - mean[0]) * (l[0] - mean[0]), sd[1] += (l[1] - mean[1]) * (l[1] - mean[1]);
    for (double& s : sd) s = std::sqrt(s / static_cast<double>(wh.size()));
    if (sd[0] > 0 && sd[1] > 0) {
      std::vector<AnchorWH> white;
      for (const AnchorWH& l : wh) white.push_back({static_cast<float>(l[0] / sd[0]), static_cast<float>(l[1] / sd[1])});
      k = kmeans(white, n, 30, rng);
      for (AnchorWH& a : k) a = {static_cast<float>(a[0] * sd[0]), static_cast<float>(a[1] * sd[1])};
    }
  }
  if (static_cast<int>(k.size()) != n) {  // too few distinct sizes: random anchors, as YOLOv5
    std::uniform_real_distribution<float> u(0, 1);
    std::vector<float> v(2 * n);
    for (float& x : v) x = u(rng) * img_size;
    std::sort(v.begin(), v.end());
    k.clear();
    for (int i = 0; i < n; ++i) k.push_back({v[2 * i], v[2 * i + 1]});
  }
  sort_by_area(k);

  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> normal(0, 1);
  double f = fitness(wh, k, thr);
  for (int g = 0; g < generations; ++g) {
    std::vector<AnchorWH> kg = k;
    bool changed = false;
    while (!changed) {  // mutate until something moves
      const double amount = u(rng);
      kg = k;
      for (AnchorWH& a : kg)
        for (float& x : a) {
          const double v = std::clamp((u(rng) < 0.9) * amount * normal(rng) * 0.1 + 1, 0.3, 3.0);
          changed |= v != 1.0;
          x = std::max(2.0f, static_cast<float>(x * v));
        }
    }
    const double fg = fitness(wh, kg, thr);
    if (fg > f) f = fg, k = kg;
  }
  sort_by_area(k);
  out.anchors = k;
  out.fitness = f;
  out.report += describe(wh0, k, img_size, thr);
  return out;
}

AutoAnchorResult auto_anchor(const std::vector<ImageRecord>& records, const std::vector<AnchorWH>& current, int img_size,
                             double thr, uint64_t seed, bool force) {
  AutoAnchorResult r;
  const std::vector<AnchorWH> wh = label_sizes(records, img_size, seed, 0.9, 1.1);
  r.before = r.after = anchor_fit(wh, current, thr);
  char s[200];
  std::snprintf(s, sizeof s, "AutoAnchor: %.2f anchors/target, %.3f Best Possible Recall (BPR). ", r.before.aat, r.before.bpr);
  r.report = s;
  if (wh.empty()) return r.report += "No labels: anchors kept\n", r;
  if (r.before.bpr > 0.98 && !force) return r.report += "Current anchors are a good fit to dataset\n", r;
  r.report += force ? "The model yaml gives an anchor count: computing anchors...\n"
                    : "Anchors are a poor fit to dataset, attempting to improve...\n";
  AnchorEvolution e = evolve_anchors(records, static_cast<int>(current.size()), img_size, thr, 1000, seed);
  r.report += e.report;
  const AnchorFit fit = anchor_fit(wh, e.anchors, thr);
  if (fit.bpr > r.before.bpr || force) {
    r.replaced = true, r.after = fit, r.anchors = std::move(e.anchors);
    std::snprintf(s, sizeof s, "AutoAnchor: Done: new anchors with BPR %.3f (before %.3f) written into the model\n", fit.bpr, r.before.bpr);
  } else {
    std::snprintf(s, sizeof s, "AutoAnchor: Done: original anchors better than new anchors (BPR %.3f vs %.3f), kept\n", r.before.bpr, fit.bpr);
  }
  return r.report += s, r;
}

}  // namespace kestrel
