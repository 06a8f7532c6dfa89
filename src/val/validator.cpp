// Validation loop (val.py semantics) over the persistent rect loader.
#include "val/validator.h"

#include <chrono>
#include <cstdio>

#include "core/elapsed.h"
#include "device/batch_upload.h"
#include "eval/nms.h"
#include "report/progress_bar.h"
#include "val/val_plots.h"

namespace kestrel {

namespace {
LoaderOptions val_loader_options(const ValOptions& o) {
  LoaderOptions l;
  l.img_size = o.img_size;
  l.batch_size = o.batch_size;
  l.workers = o.workers;
  l.augment = false;
  l.rect = true;
  l.shuffle = false;
  l.use_mosaic = false;
  l.pad = 0.5;
  l.cache = o.cache;
  l.ultralytics = o.ultralytics;
  return l;
}

}  // namespace

Validator::Validator(std::vector<ImageRecord> records, std::vector<std::string> names, ValOptions options)
    : names_(std::move(names)), options_(options), loader_(std::move(records), val_loader_options(options)) {}

ValResult Validator::run(DetectionModelImpl& model, const torch::Device& device, const ValLossFn& loss,
                         const ValOutputs& outputs) {
  const auto start = std::chrono::steady_clock::now();
  const bool was_training = model.is_training();
  model.eval();
  torch::NoGradGuard no_grad;

  NmsOptions nms = val_nms_options(model.anchor_free());
  nms.conf_thres = options_.conf_thres;
  nms.iou_thres = options_.iou_thres.value_or(nms.iou_thres);
  nms.max_det = options_.max_det.value_or(nms.max_det);
  nms.agnostic = options_.single_cls;
  const torch::Tensor iouv = iou_thresholds();

  ValStats stats;
  stats.rules = scoring_rules(model.config().ultralytics);
  const bool plots = !outputs.plot_dir.empty();
  ConfusionMatrix confusion(static_cast<int>(names_.size()));
  ValResult result;
  torch::Tensor loss_sum = torch::zeros({3});
  double t_pre = 0, t_inf = 0, t_nms = 0;
  ProgressBar bar(static_cast<int64_t>(loader_.batches_per_epoch()), stdout, {},
                  options_.progress ? std::nullopt : std::optional<bool>(false));
  bar.set_description("            Validating");
  loader_.start_epoch(0);
  size_t nbatches = 0;
  while (const Batch* batch = loader_.next()) {
    auto t0 = std::chrono::steady_clock::now();
    const DeviceBatch on_device = upload_now(*batch, device);
    const torch::Tensor& images = on_device.images;
    const torch::Tensor& targets = on_device.targets;
    t_pre += seconds_since(t0);

    t0 = std::chrono::steady_clock::now();
    std::vector<torch::Tensor> raw;
    {
      Autocast autocast(options_.precision, device);
      raw = model.forward(images);  // fp32 out of the Detect head, whatever the precision
    }
    torch::Tensor decoded = model.decode(raw);
    if (loss) loss_sum += loss(raw, targets).to(torch::kCPU);
    t_inf += seconds_since(t0);

    t0 = std::chrono::steady_clock::now();
    const std::vector<torch::Tensor> preds = non_max_suppression(decoded.to(torch::kFloat32), nms);
    t_nms += seconds_since(t0);

    const torch::Tensor cpu_targets = targets.to(torch::kCPU);
    const torch::Tensor image_index = cpu_targets.select(1, 0);
    for (int si = 0; si < batch->n; ++si) {
      const torch::Tensor labels = cpu_targets.index({image_index == si}).slice(1, 1, 6);
      const torch::Tensor pred = preds[si].to(torch::kCPU);
      const torch::Tensor predn = stats.add_image(pred, labels, batch->h, batch->w, batch->shapes[si], iouv,
                                                  options_.single_cls, plots ? &confusion : nullptr);
      if (outputs.on_image) outputs.on_image(batch->paths[si], predn, batch->shapes[si]);
    }
    if (plots) write_val_batch_plots(outputs.plot_dir, static_cast<int>(nbatches), *batch, preds, names_);
    ++nbatches;
    bar.update(1);
  }
  bar.close();
  result.metrics = stats.compute(static_cast<int>(names_.size()));
  if (plots) write_val_summary_plots(outputs.plot_dir, confusion, stats, names_);
  const double n = std::max<double>(1, static_cast<double>(stats.seen));
  result.ms_pre = 1000 * t_pre / n;
  result.ms_inference = 1000 * t_inf / n;
  result.ms_nms = 1000 * t_nms / n;
  if (nbatches) {
    loss_sum /= static_cast<double>(nbatches);
    for (int i = 0; i < 3; ++i) result.loss[i] = loss_sum[i].item<double>();
  }
  result.seconds = seconds_since(start);
  if (was_training) model.train();
  return result;
}

size_t most_objects(const std::vector<ImageRecord>& records) {
  size_t most = 0;
  for (const ImageRecord& r : records) most = std::max(most, r.labels.size());
  return most;
}

void fit_max_det(ValOptions& options, const SplitObjectCounts& counts) {
  size_t observed = 0;
  std::string per_split;
  for (const auto& [split, n] : counts) {
    observed = std::max(observed, n);
    per_split += (per_split.empty() ? "" : ", ") + split + " " + std::to_string(n);
  }
  const int max_det = options.max_det.value_or(val_nms_options(options.ultralytics).max_det);
  if (observed <= static_cast<size_t>(max_det)) return;
  std::string message = "WARNING: images hold up to " + std::to_string(observed) + " objects (" + per_split +
                        ") but validation keeps " + std::to_string(max_det) + " detections per image, which caps recall. ";
  if (options.max_det)
    message += "Keeping --max-det " + std::to_string(max_det) + " as given.";
  else if (options.ultralytics) {
    options.max_det = static_cast<int>(observed);
    message += "Validating with max_det " + std::to_string(observed) + ", as Ultralytics does.";
  } else
    message += "val.py keeps it (so does Kestrel, for the same numbers): pass --max-det " + std::to_string(observed) + " to lift the cap.";
  std::fprintf(stderr, "%s\n", message.c_str());
}

std::string format_val_speed(const ValResult& r, int img_size, int batch_size) {
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "Speed: %.1fms pre-process, %.1fms inference, %.1fms NMS per image at shape (%d, 3, %d, %d); %.1f s in all",
                r.ms_pre, r.ms_inference, r.ms_nms, batch_size, img_size, img_size, r.seconds);
  return buf;
}

}  // namespace kestrel
