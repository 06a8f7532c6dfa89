// A handful of timed repeats summarised as a figure and its noise: the median (one slow repeat does
// not move it) and the relative range (max - min) / median, which is what a probe prints as "±" (half
// of it) and what a comparison of two such figures must beat before it calls one faster.
#pragma once
#include <vector>

namespace kestrel {

struct SampleSummary {
  double median = 0;
  double spread = 0;  // (max - min) / median; 0 for fewer than two samples
  int n = 0;
};

SampleSummary summarize_samples(std::vector<double> samples);

// The noise two figures must differ by before one is called faster: half the larger relative range,
// and never under `floor` (a few repeats can agree by chance).
double comparison_noise(const SampleSummary& a, const SampleSummary& b, double floor);

}  // namespace kestrel
