// The prune command (see prune_run.h): load, measure, prune, measure, save.
#include "prune/prune_run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "core/cpu_cores.h"
#include "core/float_text.h"
#include "data/index/dataset_config.h"
#include "data/index/label_index.h"
#include "data/loader/loader.h"
#include "device/batch_upload.h"
#include "device/device.h"
#include "model/checkpoint.h"
#include "model/model_info.h"
#include "model/weights.h"
#include "report/run_dir.h"
#include "train/amp_choice.h"
#include "train/sparsity.h"
#include "val/validator.h"

namespace kestrel {

namespace {

constexpr int kCalibrationBatches = 32;

// Mean ms of a batch-1 eval forward of the fused model, after two warm-up passes.
double inference_ms(const DetectionModelImpl& model, const torch::Device& device, int img_size, Precision p) {
  const std::shared_ptr<DetectionModelImpl> m = model.copy();
  prepare_for_inference(*m, device);
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::rand({1, 3, img_size, img_size}).contiguous(torch::MemoryFormat::ChannelsLast).to(device);
  constexpr int kWarmup = 3, kRuns = 20;
  double ms = 0;
  for (int i = 0; i < kWarmup + kRuns; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    {
      Autocast autocast(p, device);
      m->forward(x);
    }
    if (i >= kWarmup) ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  return ms / kRuns;
}

ModelFigures measure(const DetectionModelImpl& model, const PruneRunOptions& o, const torch::Device& device,
                     Validator* validator) {
  ModelFigures f;
  const ModelSummary s = model_summary(model, o.img_size);
  f.layers = s.layers, f.parameters = s.parameters, f.gflops = s.gflops;
  if (validator) {
    const std::shared_ptr<DetectionModelImpl> m = model.copy();
    prepare_for_inference(*m, device);
    const ValMetrics v = validator->run(*m, device).metrics;
    f.map50_95 = v.map, f.map50 = v.map50;
  }
  return f;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The speed of both models, in alternating rounds (before, after, before, ...) so that a drift of
// the machine's speed falls on both (seen here: 30% between two minutes of one run, enough to read
// 1.17x for a 1.28x speed-up); each figure is the median of its rounds.
void measure_speed(const DetectionModelImpl& before, const DetectionModelImpl& after, const PruneRunOptions& o,
                   const torch::Device& device, Precision p, ModelFigures& fb, ModelFigures& fa) {
  constexpr int kRounds = 5;
  StepBenchOptions so;
  so.img_size = o.img_size, so.batch_size = o.batch_size, so.precision = p, so.device = device;
  so.warmup = 1, so.steps = 3;
  std::vector<double> inference[2], images_per_s[2];
  for (int r = 0; r < kRounds; ++r)
    for (int i = 0; i < 2; ++i) {
      const DetectionModelImpl& m = i == 0 ? before : after;
      inference[i].push_back(inference_ms(m, device, o.img_size, p));
      images_per_s[i].push_back(measure_steps(m, so).images_per_s);
    }
  fb.inference_ms = median_of(inference[0]), fa.inference_ms = median_of(inference[1]);
  fb.train_images_per_s = median_of(images_per_s[0]), fa.train_images_per_s = median_of(images_per_s[1]);
}

void print_figures(const char* label, const ModelFigures& f, const std::string& precision) {
  std::printf("%-7s %3lld layers, %9lld parameters, %5.1f GFLOPs", label, static_cast<long long>(f.layers),
              static_cast<long long>(f.parameters), f.gflops);
  if (f.map50_95 >= 0) std::printf(" | mAP@0.5 %.3f, mAP@0.5:0.95 %.3f", f.map50, f.map50_95);
  std::printf(" | inference %.1f ms (batch 1) | training %.1f img/s (%s)\n", f.inference_ms, f.train_images_per_s,
              precision.c_str());
}

// One line: how much went, how it was ranked, and the floors it respected.
void print_cut_summary(const PruneResult& r, const PruneOptions& o) {
  const int64_t cut = r.channels_before - r.channels_after;
  const std::string ranking = o.cost_weight > 0 ? "ranked by |gamma| / cost^" + shortest_decimal(o.cost_weight) + ", " : "";
  char largest[64] = "nothing removed";
  if (r.threshold >= 0) std::snprintf(largest, sizeof largest, "largest |gamma| removed %.4g", r.threshold);
  std::printf("Pruned %lld of %lld prunable channels (%.1f%%; %s%s; per layer at least %d kept, at most %.0f%% cut, multiples of %d)\n",
              static_cast<long long>(cut), static_cast<long long>(r.channels_before),
              100.0 * static_cast<double>(cut) / static_cast<double>(std::max<int64_t>(1, r.channels_before)),
              ranking.c_str(), largest, o.min_channels, 100 * o.max_layer_cut, o.multiple);
}

// Every prunable layer: its channels before and after, and its |gamma| (median, largest) to judge by.
void print_cuts(const std::vector<LayerCut>& cuts) {
  std::printf("%-16s %8s %8s %12s %10s\n", "layer", "before", "after", "median|g|", "max|g|");
  for (const LayerCut& c : cuts)
    std::printf("%-16s %8lld %8lld %12.4g %10.4g\n", c.name.c_str(), static_cast<long long>(c.before),
                static_cast<long long>(c.after), c.gamma_median, c.gamma_max);
}

// BatchNorm statistics of the pruned model from training batches as training makes them (mosaic and
// the default augmentation): those are the statistics the model learned with. Letterboxed images
// alone gave statistics that cost an unpruned model 0.015 mAP@0.5:0.95 on coco128.
void recalibrate(DetectionModelImpl& model, const DatasetConfig& dc, const PruneRunOptions& o, const torch::Device& device) {
  LoaderOptions lo;
  lo.img_size = o.img_size, lo.batch_size = o.batch_size, lo.workers = o.workers;
  Loader loader(build_index(dc.train, dc.nc, false).records, lo);
  loader.start_epoch(0);
  const int batches = std::min<int>(kCalibrationBatches, static_cast<int>(loader.batches_per_epoch()));
  model.to(device);
  recalibrate_batchnorm(model, [&] {
    const Batch* b = loader.next();
    return b ? upload_now(*b, device).images : torch::Tensor();
  }, batches);
  std::printf("BatchNorm statistics recalibrated on %d training batches\n", batches);
}

std::string save_pruned(const PruneRunOptions& o, const DetectionModelImpl& model, const std::string& save_dir) {
  CheckpointMeta meta;
  meta.model_yaml = model.config().text;
  meta.model_name = model.config().name;
  meta.pruned_shapes = model.config().pruned_shapes;
  meta.nc = static_cast<int>(model.nc());
  meta.names = model.names();
  meta.train_options = nlohmann::json::object();
  const std::string path = save_dir + "/weights/pruned.pt";
  std::filesystem::create_directories(save_dir + "/weights");
  save_checkpoint(path, meta, model, nullptr, nullptr);
  return path;
}

// A sparsity run with --sparsity-target drove the channels of one particular prune to |gamma| ~ 0: a
// prune at a larger ratio, or with another ranking or other floors than that run chose with, cuts
// channels it kept alive (and costs accuracy the fine-tune must win back). Said before cutting, not
// refused.
void warn_if_not_the_sparsity_target(const PruneRunOptions& o) {
  if (!is_kestrel_checkpoint(o.weights)) return;
  const nlohmann::json opt = load_checkpoint(o.weights, nullptr, nullptr, nullptr).train_options;
  if (!opt.is_object()) return;
  const PruneOptions target = sparsity_target_of(opt.get<TrainOptions>());
  if (target.ratio <= 0) return;
  const PruneOptions& p = o.prune;
  const bool same_choice = p.min_channels == target.min_channels && p.max_layer_cut == target.max_layer_cut &&
                           p.multiple == target.multiple && p.cost_weight == target.cost_weight;
  if (p.ratio <= target.ratio + 1e-9 && same_choice) return;
  std::printf("WARNING: %s was sparsity-trained for the prune `%s`; this one (`%s`) also cuts channels that run "
              "kept, so expect a larger loss of accuracy before fine-tuning\n",
              o.weights.c_str(), prune_flags(target).c_str(), prune_flags(p).c_str());
}

}  // namespace

PruneRunSummary run_prune(const PruneRunOptions& o) {
  torch::set_num_threads(static_cast<int>(usable_cores()));
  const torch::Device device = parse_device(o.device);
  DetectionModel model = build_model("", o.weights, 0).model;
  std::unique_ptr<Validator> validator;
  const DatasetConfig dc = o.data.empty() ? DatasetConfig{} : load_dataset_config(o.data);
  if (!o.data.empty()) {
    if (dc.nc != model->nc())
      throw std::runtime_error(o.weights + " (" + std::to_string(model->nc()) + " classes) was not trained on " + o.data +
                               " (" + std::to_string(dc.nc) + " classes)");
    ValOptions vo;
    vo.img_size = o.img_size, vo.batch_size = 2 * o.batch_size, vo.workers = o.workers, vo.progress = false;
    validator = std::make_unique<Validator>(build_index(dc.val, dc.nc, false).records, model->names(), vo);
  }
  StepBenchOptions shape;
  shape.img_size = o.img_size, shape.batch_size = o.batch_size, shape.device = device;
  const Precision p = choose_amp(o.amp, *model, shape).precision;

  warn_if_not_the_sparsity_target(o);
  PruneRunSummary s;
  s.before = measure(*model, o, device, validator.get());
  s.pruned = prune_channels(*model, o.prune);
  if (validator) recalibrate(*s.pruned.model, dc, o, device);
  s.after = measure(*s.pruned.model, o, device, validator.get());
  measure_speed(*model, *s.pruned.model, o, device, p, s.before, s.after);
  print_cut_summary(s.pruned, o.prune);
  print_cuts(s.pruned.cuts);
  print_figures("before:", s.before, precision_name(p));
  print_figures("after:", s.after, precision_name(p));
  std::printf("speed-up: inference %.2fx, training step %.2fx\n", s.before.inference_ms / s.after.inference_ms,
              s.after.train_images_per_s / s.before.train_images_per_s);
  const std::string save_dir = increment_path(o.project + "/" + o.name, o.exist_ok, "", /*mkdir=*/true);
  s.checkpoint = save_pruned(o, *s.pruned.model, save_dir);
  std::cout << "Saved " << s.checkpoint << "; fine-tune it with `kestrel train --weights " << s.checkpoint << " --data ...`\n";
  return s;
}

}  // namespace kestrel
