// The plain-words verdict: what limits a run and what to change, from the step timeline and the
// system samples (the decision table of DESIGN.md: compute-, data-, I/O-, memory- or power-bound).
#pragma once
#include <string>

#include "profile/system_sampler.h"
#include "profile/timeline.h"

namespace kestrel {

// host: a GPU run whose GPU idles while the step hardly waits for data: the host's own work per step
// (launching kernels, reading the loss back) is the limit.
enum class Bound { compute, data, io, memory, power, communication, host };
const char* bound_name(Bound b);

struct VerdictInput {
  StageTotals steps;             // timeline over the window judged
  SystemSummary system;          // sampler summary over the same window
  bool gpu = false;              // training on an accelerator
  int loader_workers = 0;        // loader threads
  std::string largest_loader_stage;  // e.g. "decode", from the loader's stage timers ("" if unknown)
  bool images_cached = false;   // --cache ram or disk in use
  int processes = 1;            // data-parallel ranks of the job
};

struct Verdict {
  Bound bound = Bound::compute;
  std::string summary;  // one line: what limits the run, with the figure that shows it
  std::string action;   // the next thing to try
};

Verdict judge(const VerdictInput& in);

}  // namespace kestrel
