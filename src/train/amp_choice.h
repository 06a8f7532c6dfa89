// --amp auto|fp16|bf16|off resolved to one precision for the run, said in words. auto: on CUDA, fp16
// after YOLOv5's check_amp idea (fp32 and fp16 predictions of the model on one image must agree);
// on a CPU, bf16 only when the CPU has bf16 instructions and bf16 steps measure faster than fp32
// ones beyond their noise. The probe times what the run's steps do (forward, loss and backward of
// a copy of the model, with the run's threads, heap, batch and image size), alternating the two
// precisions after a warm-up step of each so that drift hits both alike; it prints the median and
// range of each. Within the noise the default, fp32, stays. The run checks the figure of its choice
// against its own steps (profile/auto_check.h). An explicit choice is taken as given.
#pragma once
#include <string>

#include "model/detection_model.h"
#include "core/sample_stats.h"
#include "train/step_bench.h"

namespace kestrel {

struct AmpChoice {
  Precision precision = Precision::fp32;
  std::string why;  // one line: what was measured or checked, and the choice
  // The probe's forward+loss+backward ms per step of each precision (n == 0: nothing was timed).
  SampleSummary fp32_ms, bf16_ms;
  const SampleSummary& timed(Precision p) const { return p == Precision::bf16 ? bf16_ms : fp32_ms; }
};

// Timed steps of each precision in the probe, after one warm-up step of each.
constexpr int kAmpProbeRepeats = 3;

// `shape` gives the image size, batch, device and hyp of the run; its precision is ignored.
AmpChoice choose_amp(const std::string& flag, const DetectionModelImpl& model, const StepBenchOptions& shape);

// check_amp: decoded predictions of the model (eval mode) on one synthetic image in fp32 and in `p`,
// as fractions of the image size plus scores, agree within 0.1 over the 100 most confident rows.
bool amp_predictions_agree(const DetectionModelImpl& model, Precision p, const torch::Device& device, int img_size);

}  // namespace kestrel
