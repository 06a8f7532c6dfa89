// --amp auto|fp16|bf16|off resolved to one precision for the run, said in words. auto: on CUDA, fp16
// after YOLOv5's check_amp idea (fp32 and fp16 predictions of the model on one image must agree);
// on a CPU, bf16 only when the CPU has bf16 instructions and a short measurement of both at the
// run's shape shows bf16 faster (both figures printed). An explicit choice is taken as given.
#pragma once
#include <string>

#include "model/detection_model.h"
#include "train/step_bench.h"

namespace kestrel {

struct AmpChoice {
  Precision precision = Precision::fp32;
  std::string why;  // one line: what was measured or checked, and the choice
};

// `shape` gives the image size, batch, device and hyp of the run; its precision is ignored.
AmpChoice choose_amp(const std::string& flag, const DetectionModelImpl& model, const StepBenchOptions& shape);

// check_amp: decoded predictions of the model (eval mode) on one synthetic image in fp32 and in `p`,
// as fractions of the image size plus scores, agree within 0.1 over the 100 most confident rows.
bool amp_predictions_agree(const DetectionModelImpl& model, Precision p, const torch::Device& device, int img_size);

}  // namespace kestrel
