// NaN triage (see divergence.h).
#include "train/divergence.h"

#include <cmath>
#include <sstream>

namespace kestrel {

std::vector<std::string> odd_label_notes(const Batch& batch, int nc) {
  int non_finite = 0, bad_class = 0, outside = 0, empty = 0, oversized = 0;
  for (size_t r = 0; r < batch.num_labels(); ++r) {
    const float* l = &batch.labels[r * 6];
    bool finite = true;
    for (int k = 0; k < 6; ++k) finite = finite && std::isfinite(l[k]);
    if (!finite) {
      ++non_finite;
      continue;
    }
    if (l[1] < 0 || l[1] >= nc || l[1] != std::floor(l[1])) ++bad_class;
    if (l[2] < 0 || l[2] > 1 || l[3] < 0 || l[3] > 1) ++outside;
    if (l[4] <= 0 || l[5] <= 0) ++empty;
    if (l[4] > 1 || l[5] > 1) ++oversized;
  }
  std::vector<std::string> notes;
  auto add = [&](int n, const std::string& what) {
    if (n) notes.push_back(std::to_string(n) + " label" + (n == 1 ? " " : "s ") + what);
  };
  add(non_finite, "with inf/NaN values");
  add(bad_class, "with a class outside 0.." + std::to_string(nc - 1));
  add(outside, "centred outside the image");
  add(empty, "of zero or negative width/height");
  add(oversized, "wider or taller than the image");
  return notes;
}

std::string divergence_message(const DivergenceReport& r) {
  std::ostringstream m;
  m << "training diverged: the loss or its gradients were inf/NaN for " << r.consecutive
    << " optimizer steps in a row, last at epoch " << r.epoch << ", batch " << r.batch << " (step " << r.step
    << "); those steps were not applied to the weights"
    << (r.last_good.empty() ? "" : ", and " + r.last_good + " holds the last finished epoch") << ".\n";
  if (r.scaler)
    m << "  " << r.precision << " loss scaler: every one of those steps was skipped; the scale fell to " << r.scale
      << " (an fp16 overflow would have settled long before)\n";
  else
    m << "  precision " << r.precision << ", no loss scaler\n";
  if (!r.labels_checked)
    m << "  labels of that batch: not checked (--resident)\n";
  else if (r.label_notes.empty())
    m << "  labels of that batch: nothing odd\n";
  else
    for (const std::string& n : r.label_notes) m << "  labels of that batch: " << n << "\n";
  if (!r.images.empty()) {
    m << "  its images:";
    for (size_t i = 0; i < r.images.size() && i < 4; ++i) m << " " << r.images[i];
    m << (r.images.size() > 4 ? " ...\n" : "\n");
  }
  m << "What to try, in this order:\n"
    << "  1. a learning rate ten times lower: lr0: " << r.lr0 / 10 << " in a --hyp file\n"
    << "  2. the labels: kestrel scan --data " << r.data << "\n";
  if (r.precision != "fp32") m << "  3. mixed precision off: --amp off\n";
  return m.str();
}

}  // namespace kestrel
