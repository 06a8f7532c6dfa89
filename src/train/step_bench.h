// Times training steps of a model on synthetic batches: forward, loss, backward and optimizer step
// in ms, images/s, and the peak memory the step took. One measurement serves `kestrel bench step`
// (fp32 / bf16 / fp16 side by side), --amp auto (is bf16 faster here, at this shape?) and AutoBatch
// (which batch gives the best images/s within memory). It works on a copy of the model, so the
// model's weights and BatchNorm statistics are untouched.
#pragma once
#include <torch/torch.h>

#include <string>
#include <vector>

#include "core/hyp.h"
#include "distributed/data_parallel.h"
#include "model/detection_model.h"
#include "model/precision.h"
#include "train/detection_loss.h"

namespace kestrel {

struct StepBenchOptions {
  int img_size = 640;
  int batch_size = 16;
  Precision precision = Precision::fp32;
  int warmup = 1;          // untimed steps first (allocator, oneDNN primitive caches)
  int steps = 3;           // timed steps; the figures are their means
  bool optimizer = true;   // include the SGD step (AutoBatch and --amp auto time forward+backward)
  torch::Device device = torch::kCPU;
  // The layout of weights and batches: channels-last, as the trainer runs, or NCHW (Contiguous), to
  // measure which is faster on a device (`bench step --layout`).
  torch::MemoryFormat memory_format = torch::MemoryFormat::ChannelsLast;
  Hyp hyp;
  // A rank of a data-parallel job: each step's gradients are averaged over the job (loss x world
  // size, as the trainer), and the wait for that exchange is timed as communication.
  DataParallel* dp = nullptr;
  GradSyncOptions grad_sync;
};

struct StepTimes {
  double forward_ms = 0, loss_ms = 0, backward_ms = 0, communication_ms = 0, optimizer_ms = 0;
  double step_ms() const { return forward_ms + loss_ms + backward_ms + communication_ms + optimizer_ms; }
  double images_per_s = 0;
  double spread = 0;      // the range of the timed steps' times, relative to their median (measure_steps)
  double peak_bytes = 0;  // CPU: resident memory the steps added at their peak (VmHWM); CUDA: the caching
                          // allocator's peak reserved bytes
};

// A copy of the model set up for timed steps on one synthetic batch (optimizer, loss, the batch on
// the device); each step() runs one at the precision asked, so that probes can alternate precisions
// on the same state.
class StepRunner {
 public:
  StepRunner(const DetectionModelImpl& model, const StepBenchOptions& options);
  ~StepRunner();
  StepTimes step(Precision precision);

 private:
  StepBenchOptions o_;
  std::shared_ptr<DetectionModelImpl> model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  DetectionLoss loss_;
  torch::Tensor images_, targets_;
};

// options.warmup untimed steps, then the mean of options.steps, and the peak memory they took.
StepTimes measure_steps(const DetectionModelImpl& model, const StepBenchOptions& options);

// `kestrel bench step`: the model (cfg and/or weights, nc classes) timed at each precision in one
// run, a line each with the speed-up over the first.
struct StepBenchRun {
  std::string cfg, weights;  // neither: yolov5n.yaml
  std::string device;        // "" = GPU 0 when there is one
  int nc = 0;                                // 0: the model's own (80 for a yaml)
  std::vector<std::string> precisions = {"fp32", "bf16"};
  StepBenchOptions shape;
};
void run_step_bench(const StepBenchRun& run);

// `kestrel bench dp`: one process with every core against N processes sharing them, at the same
// global batch, the N-process steps once with gradients exchanged in buckets during backward and
// once in one all-reduce after it. Run outside a job it measures the one-process step, then starts
// the N ranks of itself; rank 0 prints theirs.
struct DataParallelBenchRun {
  std::string cfg = "yolov5n.yaml";
  int nc = 80, nproc = 2, master_port = 29500;
  StepBenchOptions shape;  // batch_size: the global batch
};
int run_data_parallel_bench(const DataParallelBenchRun& run);

// "fp32: 2998.1 ms/step (fwd 1010.2, loss 20.3, bwd 1890.0, opt 77.6), 5.3 img/s"
std::string format_step_times(const std::string& label, const StepTimes& t);

}  // namespace kestrel
