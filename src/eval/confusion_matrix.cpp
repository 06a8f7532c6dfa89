// The confusion matrix of val.py's plots (see confusion_matrix.h).
#include "eval/confusion_matrix.h"

#include <algorithm>
#include <set>

#include "eval/boxes.h"

namespace kestrel {

ConfusionMatrix::ConfusionMatrix(int nc, double conf, double iou_thres)
    : nc_(nc), conf_(conf), iou_thres_(iou_thres), matrix_(static_cast<size_t>(nc + 1) * (nc + 1), 0.0) {}

void ConfusionMatrix::add_missed(const torch::Tensor& label_classes) {
  const torch::Tensor c = label_classes.to(torch::kCPU, torch::kFloat32).contiguous();
  for (int64_t i = 0; i < c.numel(); ++i) add(nc_, static_cast<int>(c.data_ptr<float>()[i]));
}

void ConfusionMatrix::process_batch(const torch::Tensor& detections_in, const torch::Tensor& labels_in) {
  const torch::Tensor d_all = detections_in.to(torch::kCPU, torch::kFloat32);
  const torch::Tensor det = d_all.index({d_all.select(1, 4) > conf_}).contiguous();
  const torch::Tensor labels = labels_in.to(torch::kCPU, torch::kFloat32).contiguous();
  const int64_t m = labels.size(0), n = det.size(0);
  const torch::Tensor iou = box_iou(labels.slice(1, 1, 5), det.slice(1, 0, 4)).contiguous();  // [m, n]
  struct Pair {
    int64_t label, det;
    float iou;
  };
  std::vector<Pair> pairs;
  const float* iv = iou.data_ptr<float>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      if (iv[i * n + j] > iou_thres_) pairs.push_back({i, j, iv[i * n + j]});
  // Highest IoU first; each detection keeps its best pair, then each label its best remaining one.
  auto by_iou = [](const Pair& a, const Pair& b) { return a.iou > b.iou; };
  std::stable_sort(pairs.begin(), pairs.end(), by_iou);
  std::vector<Pair> kept;
  std::set<int64_t> seen;
  for (const Pair& p : pairs)
    if (seen.insert(p.det).second) kept.push_back(p);
  pairs.clear(), seen.clear();
  for (const Pair& p : kept)
    if (seen.insert(p.label).second) pairs.push_back(p);

  const float* dv = det.data_ptr<float>();
  const float* lv = labels.data_ptr<float>();
  for (int64_t i = 0; i < m; ++i) {
    const auto it = std::find_if(pairs.begin(), pairs.end(), [&](const Pair& p) { return p.label == i; });
    const int truth = static_cast<int>(lv[i * 5]);
    if (it != pairs.end()) add(static_cast<int>(dv[it->det * 6 + 5]), truth);
    else add(nc_, truth);
  }
  if (pairs.empty()) return;
  for (int64_t j = 0; j < n; ++j)
    if (std::none_of(pairs.begin(), pairs.end(), [&](const Pair& p) { return p.det == j; }))
      add(static_cast<int>(dv[j * 6 + 5]), nc_);
}

}  // namespace kestrel
