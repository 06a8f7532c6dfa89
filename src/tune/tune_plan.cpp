// The lever ladder of the field report (local data and a cache, loader workers and prefetch, pinned
// memory, mixed precision with a larger batch), the keep rule, and the report's JSON form.
#include "tune/tune_plan.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <stdexcept>

namespace kestrel {

namespace {

// YOLOv5 v7.0's published COCO val mAP@0.5:0.95 at 640 of each scale (its README table).
struct Scale {
  const char* name;
  double coco_map;
};
constexpr Scale kScales[] = {{"yolov5n", 28.0}, {"yolov5s", 37.4}, {"yolov5m", 45.4}, {"yolov5l", 49.0}, {"yolov5x", 50.7}};

// The scale of the model a configuration trains (from --cfg, else the weights' file name), or -1.
int scale_of(const TrainOptions& o) {
  const std::string stem = std::filesystem::path(o.cfg.empty() ? o.weights : o.cfg).stem().string();
  for (int i = 0; i < 5; ++i)
    if (stem == kScales[i].name) return i;
  return -1;
}

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v;
  return s.str();
}

}  // namespace

std::vector<Lever> speed_levers(const TrainOptions& b, const MachineFacts& f, std::vector<std::string>& skipped) {
  std::vector<Lever> out;
  if (b.cache == "none")
    out.push_back({"cache", "--cache auto", "", [](TrainOptions& o) { o.cache = "auto"; }});  // RAM if it fits, else disk
  else
    skipped.push_back("cache: already --cache " + b.cache);
  if (b.workers >= 0)
    out.push_back({"workers", "--workers auto", "", [](TrainOptions& o) { o.workers = -1; }});  // the measured knee
  else
    skipped.push_back("workers: already --workers auto (the measured knee)");
  if (b.prefetch < 8)
    out.push_back({"prefetch", "--prefetch 8", "", [](TrainOptions& o) { o.prefetch = 8; }});
  else
    skipped.push_back("prefetch: already " + std::to_string(b.prefetch) + " batches ahead");
  skipped.push_back(f.gpu ? "pinned memory: always on with a GPU (reused pinned batch buffers)"
                          : "pinned memory: only for copies to a GPU, and this run has none");
  const std::string amp = f.gpu ? "fp16" : "bf16";
  if (b.amp == "auto")
    skipped.push_back("mixed precision: --amp auto already times " + amp + " against fp32 at this shape and keeps the faster");
  else if (b.amp != "off")
    skipped.push_back("mixed precision: already --amp " + b.amp);
  else if (!f.gpu && !f.cpu_bf16)
    skipped.push_back("mixed precision: this CPU has no bf16 instructions and there is no GPU");
  else
    out.push_back({"precision", "--amp " + amp, "", [amp](TrainOptions& o) { o.amp = amp; }});
  if (b.batch_size > 0)
    out.push_back({"batch", "--batch-size -1", "", [](TrainOptions& o) { o.batch_size = -1; }});  // AutoBatch
  else
    skipped.push_back("batch: already AutoBatch (--batch-size -1)");
  return out;
}

std::vector<Lever> accuracy_levers(const TrainOptions& b) {
  std::vector<Lever> out;
  const int scale = scale_of(b);
  if (scale > 0) {
    const Scale smaller = kScales[scale - 1], current = kScales[scale];
    const std::string cfg = std::string(smaller.name) + ".yaml";
    out.push_back({"smaller model", "--cfg " + cfg,
                   "COCO mAP@0.5:0.95 " + fixed(current.coco_map, 1) + " -> " + fixed(smaller.coco_map, 1) + " (YOLOv5's table)",
                   [cfg](TrainOptions& o) {
                     o.cfg = cfg;
                     o.weights.clear();  // timed from scratch: speed does not depend on the weights
                   }});
  }
  const int img = std::max(64, b.img_size * 3 / 4 / 32 * 32);
  if (img < b.img_size) {
    const double pixels = static_cast<double>(img) * img / (static_cast<double>(b.img_size) * b.img_size);
    out.push_back({"smaller input", "--img " + std::to_string(img),
                   "objects keep " + fixed(100 * pixels, 0) + "% of their pixels: small objects get harder to find",
                   [img](TrainOptions& o) { o.img_size = img; }});
  }
  return out;
}

bool keeps_lever(double candidate_epoch_s, double current_epoch_s, double noise) {
  return candidate_epoch_s < current_epoch_s * (1 - noise);
}

double noise_margin(double first_s, double second_s) {
  const double lo = std::min(first_s, second_s), hi = std::max(first_s, second_s);
  return std::max(0.02, lo > 0 ? (hi - lo) / lo : 0.0);
}

double predicted_epoch_seconds(double fill_s, double step_s, double batches, double val_s, int val_period) {
  return fill_s + step_s * batches + val_s / std::max(1, val_period);
}

double parse_budget(const std::string& text) {
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
  }
  const std::string unit = text.substr(std::min(used, text.size()));
  const double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  if (v <= 0 || scale < 0 || !std::isfinite(v))
    throw std::invalid_argument("--budget " + text + ": give a time such as 600, 90s, 10m or 1.5h");
  return v * scale;
}

std::string train_command(const TrainOptions& o) {
  const TrainOptions d;
  std::string c = "kestrel train";
  const auto flag = [&c](const std::string& name, const std::string& value) { c += " --" + name + " " + value; };
  if (!o.data.empty()) flag("data", o.data);
  if (!o.cfg.empty()) flag("cfg", o.cfg);
  if (!o.weights.empty()) flag("weights", o.weights);
  if (!o.hyp.empty()) flag("hyp", o.hyp);
  if (o.epochs != d.epochs) flag("epochs", std::to_string(o.epochs));
  flag("img", std::to_string(o.img_size));
  flag("batch-size", std::to_string(o.batch_size));
  if (o.cache != d.cache) flag("cache", o.cache);
  if (o.workers >= 0) flag("workers", std::to_string(o.workers));
  if (o.prefetch != d.prefetch) flag("prefetch", std::to_string(o.prefetch));
  if (o.amp != d.amp) flag("amp", o.amp);
  if (o.device != d.device) flag("device", o.device);
  if (o.val_period != d.val_period) flag("val-period", std::to_string(o.val_period));
  if (o.noval) c += " --noval";
  if (o.noplots) c += " --noplots";
  if (o.nbs != d.nbs) flag("nbs", std::to_string(o.nbs));
  if (o.lr_scale != d.lr_scale) flag("lr-scale", o.lr_scale);
  if (o.optimizer != d.optimizer) flag("optimizer", o.optimizer);
  if (o.freeze != d.freeze) {
    c += " --freeze";
    for (int layer : o.freeze) c += " " + std::to_string(layer);
  }
  if (o.seed != d.seed) flag("seed", std::to_string(o.seed));
  if (o.close_mosaic != d.close_mosaic) flag("close-mosaic", std::to_string(o.close_mosaic));
  if (o.rect) c += " --rect";
  if (o.multi_scale) c += " --multi-scale";
  if (o.single_cls) c += " --single-cls";
  if (!o.scan) c += " --no-scan";
  return c;
}

}  // namespace kestrel
