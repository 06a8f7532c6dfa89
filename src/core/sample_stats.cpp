// Median and relative range of timed repeats (see sample_stats.h).
#include "core/sample_stats.h"

#include <algorithm>

namespace kestrel {

SampleSummary summarize_samples(std::vector<double> samples) {
  SampleSummary s;
  s.n = static_cast<int>(samples.size());
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const size_t mid = samples.size() / 2;
  s.median = samples.size() % 2 ? samples[mid] : (samples[mid - 1] + samples[mid]) / 2;
  s.spread = s.median > 0 ? (samples.back() - samples.front()) / s.median : 0;
  return s;
}

double comparison_noise(const SampleSummary& a, const SampleSummary& b, double floor) {
  return std::max(floor, std::max(a.spread, b.spread) / 2);
}

}  // namespace kestrel
