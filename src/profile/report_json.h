// The end-of-run timing report: report.json (stage totals, utilisation summary and series, the
// verdict) and a PNG chart of the step-time split and the utilisation over time.
#pragma once
#include <string>
#include <vector>

#include "profile/system_sampler.h"
#include "profile/timeline.h"
#include "profile/verdict.h"

namespace kestrel {

// png_path "" skips the chart (--noplots).
void write_run_report(const std::string& json_path, const StageTotals& steps, const std::vector<SystemSample>& samples,
                      const Verdict& verdict, const std::string& png_path);

}  // namespace kestrel
