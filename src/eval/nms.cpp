// YOLOv5 v7.0 non_max_suppression with torchvision's greedy NMS, on raw float arrays.
#include "eval/nms.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace kestrel {
namespace {

constexpr float kMaxWh = 7680.0f;  // class offset of YOLOv5's batched NMS

// A candidate before ranking: its score and (row * nc + class), which is also YOLOv5's candidate
// order, so comparing keys breaks score ties the way a stable sort does.
struct Candidate {
  float score;
  uint32_t key;
};

inline bool ranks_before(const Candidate& a, const Candidate& b) {
  return a.score > b.score || (a.score == b.score && a.key < b.key);
}

// The largest float t with ((double)f > thres) == (f > t) for every float f, so the hot loop can
// compare in float32 while torchvision compares its float IoU against a double threshold.
float float_threshold(double thres) {
  float t = static_cast<float>(thres);
  if (static_cast<double>(t) > thres) t = std::nextafter(t, -INFINITY);
  return t;
}

// Candidates of one image in YOLOv5's order (row-major over rows, then classes).
void collect_candidates(const float* rows, int64_t n, int64_t nc, const NmsOptions& opt,
                        bool multi_label, std::vector<Candidate>& out) {
  const float conf = static_cast<float>(opt.conf_thres);  // tensor > python float runs in float32
  const int64_t first_class = opt.objectness ? 5 : 4, stride = first_class + nc;
  auto push = [&](int64_t row, float score, int64_t cls) {
    if (!opt.classes.empty() &&
        std::find(opt.classes.begin(), opt.classes.end(), cls) == opt.classes.end())
      return;
    out.push_back({score, static_cast<uint32_t>(row * nc + cls)});
  };
  for (int64_t i = 0; i < n; ++i) {
    const float* r = rows + i * stride;
    // Without objectness, 1: every row is a candidate, scored by its classes alone, which is
    // Ultralytics' filter (its best class above conf_thres) and scores to the bit.
    const float obj = opt.objectness ? r[4] : 1.0f;
    if (!(obj > conf)) continue;
    const float* cls = r + first_class;
    if (multi_label) {
      for (int64_t j = 0; j < nc; ++j) {
        const float score = cls[j] * obj;
        if (score > conf) push(i, score, j);
      }
    } else {
      int64_t best = 0;
      float best_score = cls[0] * obj;
      for (int64_t j = 1; j < nc; ++j) {
        const float score = cls[j] * obj;
        if (score > best_score) {  // first maximum wins, as torch.max
          best_score = score;
          best = j;
        }
      }
      if (best_score > conf) push(i, best_score, best);
    }
  }
}

// Sorts candidates by score descending (ties in candidate order, as a stable sort) and keeps the
// first `limit`.
void rank_candidates(std::vector<Candidate>& c, size_t limit) {
  if (c.size() > limit) {
    std::nth_element(c.begin(), c.begin() + limit, c.end(), ranks_before);
    c.resize(limit);
  }
  std::sort(c.begin(), c.end(), ranks_before);
}

using Floats = float __attribute__((vector_size(32)));
using Ints = int32_t __attribute__((vector_size(32)));
constexpr size_t kLanes = sizeof(Floats) / sizeof(float);

// Unaligned loads without returning a vector by value (whose ABI would depend on -mavx).
inline void load(Floats& v, const float* p) { std::memcpy(&v, p, sizeof v); }

// Ranked candidate boxes offset by class in float32 (YOLOv5's `x[:, :4] + c`) with torchvision's
// areas, stored in groups that can suppress one another. Boxes of different classes are offset
// 7680 px apart, so when every raw coordinate lies within +-kSplitLimit their offset boxes cannot
// intersect (the float32 rounding of the offsets is at most 1 px below 2^24): their IoU is 0, never
// above the threshold, and NMS only needs to compare boxes of one class. Otherwise (agnostic, or
// huge boxes) everything is one group. Each group is padded with zero boxes to whole vectors.
struct GroupedBoxes {
  static constexpr float kSplitLimit = 3000.0f;
  std::vector<float> x1, y1, x2, y2, area;
  std::vector<int32_t> slot, group_end;  // per ranked candidate: its position, its group's end
  std::vector<int32_t> group_size, group_start;

  void build(const std::vector<Candidate>& ranked, const float* rows, int64_t row_width, int64_t nc, bool agnostic) {
    const size_t m = ranked.size();
    auto raw_box = [&](size_t k, float* out) {
      const float* r = rows + (ranked[k].key / nc) * row_width;
      const float half_w = r[2] / 2, half_h = r[3] / 2;
      out[0] = r[0] - half_w, out[1] = r[1] - half_h, out[2] = r[0] + half_w, out[3] = r[1] + half_h;
    };
    bool split = !agnostic && nc * static_cast<int64_t>(kMaxWh) < (int64_t{1} << 24) - 8192;
    for (size_t k = 0; k < m && split; ++k) {
      float b[4];
      raw_box(k, b);
      for (float v : b) split = split && v > -kSplitLimit && v < kSplitLimit;  // false for NaN
    }
    const int64_t groups = split ? nc : 1;
    group_size.assign(groups, 0);
    for (const Candidate& c : ranked) ++group_size[split ? c.key % nc : 0];
    group_start.resize(groups);
    size_t total = 0;
    for (int64_t g = 0; g < groups; ++g) {
      group_start[g] = static_cast<int32_t>(total);
      total += (group_size[g] + kLanes - 1) / kLanes * kLanes;
    }
    for (auto* v : {&x1, &y1, &x2, &y2, &area}) v->assign(total, 0.0f);
    slot.resize(m), group_end.resize(m);
    std::fill(group_size.begin(), group_size.end(), 0);  // reused as fill counters
    for (size_t k = 0; k < m; ++k) {
      const int64_t cls = ranked[k].key % nc;
      const int64_t g = split ? cls : 0;
      const int32_t at = group_start[g] + group_size[g]++;
      const size_t padded_size = (g + 1 < groups) ? group_start[g + 1] : total;
      slot[k] = at, group_end[k] = static_cast<int32_t>(padded_size);
      float b[4];
      raw_box(k, b);
      const float offset = agnostic ? 0.0f : static_cast<float>(cls) * kMaxWh;
      x1[at] = b[0] + offset, y1[at] = b[1] + offset, x2[at] = b[2] + offset, y2[at] = b[3] + offset;
      area[at] = (x2[at] - x1[at]) * (y2[at] - y1[at]);
    }
  }
};

// torchvision.ops.nms (CPU kernel) on the ranked candidates: each box not yet suppressed is kept
// and suppresses every later box of its group with IoU > thres, in torchvision's float32
// arithmetic inter / (area_i + area_j - inter). Stops after max_keep keeps: later survivors would
// be cut by max_det and cannot change earlier decisions. The scan covers whole vectors from the one
// holding the kept box; marks on boxes already decided or suppressed change nothing.
void greedy_nms(const GroupedBoxes& b, float iou_thres, size_t max_keep,
                std::vector<int32_t>& suppressed, std::vector<int32_t>& keep) {
  suppressed.assign(b.x1.size(), 0);
  keep.clear();
  const Floats zero = {}, thres = zero + iou_thres;
  for (size_t k = 0; k < b.slot.size() && keep.size() < max_keep; ++k) {
    const size_t i = b.slot[k];
    if (suppressed[i]) continue;
    keep.push_back(static_cast<int32_t>(k));
    const Floats bx1 = zero + b.x1[i], by1 = zero + b.y1[i], bx2 = zero + b.x2[i],
                 by2 = zero + b.y2[i], barea = zero + b.area[i];
    const size_t end = b.group_end[k];
    for (size_t j = (i + 1) / kLanes * kLanes; j < end; j += kLanes) {
      Floats x1, y1, x2, y2, area;
      load(x1, &b.x1[j]), load(y1, &b.y1[j]), load(x2, &b.x2[j]), load(y2, &b.y2[j]);
      load(area, &b.area[j]);
      const Floats xx1 = bx1 < x1 ? x1 : bx1, yy1 = by1 < y1 ? y1 : by1;  // std::max
      const Floats xx2 = x2 < bx2 ? x2 : bx2, yy2 = y2 < by2 ? y2 : by2;  // std::min
      Floats w = xx2 - xx1, h = yy2 - yy1;
      w = zero < w ? w : zero;
      h = zero < h ? h : zero;
      const Floats inter = w * h;
      const Ints over = (inter / (barea + area - inter)) > thres;
      Ints s;
      std::memcpy(&s, &suppressed[j], sizeof s);
      s |= over;
      std::memcpy(&suppressed[j], &s, sizeof s);
    }
  }
}

// Per-thread buffers, so validation does not allocate per image.
struct Scratch {
  std::vector<Candidate> candidates;
  GroupedBoxes boxes;
  std::vector<int32_t> suppressed, keep;
};

}  // namespace

NmsOptions val_nms_options(bool anchor_free) {
  NmsOptions o;
  o.conf_thres = 0.001;
  o.iou_thres = anchor_free ? 0.7 : 0.6;
  o.multi_label = true;
  o.max_det = 300;
  o.objectness = !anchor_free;
  return o;
}

NmsOptions predict_nms_options(bool anchor_free) {
  NmsOptions o;
  o.conf_thres = 0.25;
  o.iou_thres = anchor_free ? 0.7 : 0.45;
  o.max_det = anchor_free ? 300 : 1000;
  o.objectness = !anchor_free;
  return o;
}

std::vector<torch::Tensor> non_max_suppression(const torch::Tensor& prediction,
                                               const NmsOptions& options) {
  const int64_t first_class = options.objectness ? 5 : 4;
  TORCH_CHECK(prediction.dim() == 3 && prediction.size(2) > first_class,
              options.objectness ? "prediction must be [bs, N, 5+nc]" : "prediction must be [bs, N, 4+nc]");
  TORCH_CHECK(options.conf_thres >= 0 && options.conf_thres <= 1, "conf_thres must be in [0, 1]");
  TORCH_CHECK(options.iou_thres >= 0 && options.iou_thres <= 1, "iou_thres must be in [0, 1]");
  const auto start = std::chrono::steady_clock::now();
  const auto device = prediction.device();
  const auto pred = prediction.to(torch::kCPU, torch::kFloat32).contiguous();
  const int64_t bs = pred.size(0), n = pred.size(1), row_width = pred.size(2), nc = row_width - first_class;
  const bool multi_label = options.multi_label && nc > 1;
  const float iou_thres = float_threshold(options.iou_thres);
  const double time_limit_s = 0.5 + 0.05 * static_cast<double>(bs);

  TORCH_CHECK(n * nc < (int64_t{1} << 32), "too many rows x classes for NMS");
  std::vector<torch::Tensor> output(bs);
  for (auto& o : output) o = torch::zeros({0, 6}, torch::TensorOptions(device));
  thread_local Scratch scratch;
  auto& candidates = scratch.candidates;
  for (int64_t b = 0; b < bs; ++b) {
    const float* rows = pred[b].data_ptr<float>();
    candidates.clear();
    collect_candidates(rows, n, nc, options, multi_label, candidates);
    if (candidates.empty()) continue;
    rank_candidates(candidates, static_cast<size_t>(std::max(options.max_nms, 0)));

    scratch.boxes.build(candidates, rows, row_width, nc, options.agnostic);
    greedy_nms(scratch.boxes, iou_thres, static_cast<size_t>(std::max(options.max_det, 0)),
               scratch.suppressed, scratch.keep);

    const auto& keep = scratch.keep;
    auto det = torch::empty({static_cast<int64_t>(keep.size()), 6}, torch::kFloat32);
    float* d = det.data_ptr<float>();
    for (size_t k = 0; k < keep.size(); ++k, d += 6) {
      const Candidate& c = candidates[keep[k]];
      const float* r = rows + (c.key / nc) * row_width;
      const float half_w = r[2] / 2, half_h = r[3] / 2;
      d[0] = r[0] - half_w, d[1] = r[1] - half_h, d[2] = r[0] + half_w, d[3] = r[1] + half_h;
      d[4] = c.score;
      d[5] = static_cast<float>(c.key % nc);
    }
    output[b] = det.to(device);
    if (options.time_limit) {
      const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
      if (elapsed.count() > time_limit_s) break;
    }
  }
  return output;
}

}  // namespace kestrel
