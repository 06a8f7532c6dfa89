// Shared flag registration (see flags.h).
#include "flags.h"

namespace kestrel::cli {

void add_model_flags(CLI::App* cmd, std::string& weights, std::string& cfg, std::string& device) {
  cmd->add_option("--weights", weights, "YOLOv5 .pt or Kestrel checkpoint")->required();
  cmd->add_option("--cfg", cfg, "model yaml when the weights carry none");
  cmd->add_option("--device", device, "cuda device: 0, cuda:1, 0,1,2,3 (one process per GPU), or cpu; default: a GPU when there is one");
}

void add_inference_flags(CLI::App* cmd, double& conf_thres, std::optional<double>& iou_thres, std::optional<int>& max_det,
                         bool& half) {
  cmd->add_option("--conf-thres", conf_thres, "confidence threshold");
  cmd->add_option("--iou-thres", iou_thres, "NMS IoU threshold (default: YOLOv5 models 0.6 in val, 0.45 in detect; YOLOv8/YOLO11 0.7)");
  cmd->add_option("--max-det", max_det, "maximum detections per image (default: 300; detect with a YOLOv5 model 1000)");
  cmd->add_flag("--half", half, "half-precision inference: fp16 on CUDA, bf16 on a CPU");
}

void add_run_folder_flags(CLI::App* cmd, std::string& project, std::string& name, bool& exist_ok) {
  cmd->add_option("--project", project, "save to project/name");
  cmd->add_option("--name", name, "save to project/name");
  cmd->add_flag("--exist-ok", exist_ok, "existing project/name ok, do not increment");
}

void add_amp_flag(CLI::App* cmd, std::string& amp, const std::string& help) {
  cmd->add_option("--amp", amp, help)->check(CLI::IsMember({"auto", "fp16", "bf16", "off"}));
}

// The train.py flags, shared by `train` and `profile` (which runs the same configuration briefly).
void add_train_flags(CLI::App* cmd, TrainOptions& o, std::string& workers, bool& no_progress) {
  cmd->add_option("--weights", o.weights, "initial weights: a YOLOv5 .pt or a Kestrel checkpoint ('' = from scratch)");
  cmd->add_option("--cfg", o.cfg, "model yaml (path or built-in: yolov5{n,s,m,l,x}.yaml, yolov8n.yaml .. yolov8x, yolo11n .. yolo11x, yolov5nu .. yolov5xu)");
  cmd->add_option("--data", o.data, "data.yaml (default: the built-in demo dataset)");
  cmd->add_option("--hyp", o.hyp, "hyperparameters yaml over the family's defaults (YOLOv5: hyp.scratch-low; YOLOv8/YOLO11: Ultralytics' default.yaml)");
  cmd->add_option("--batch-size,--batch", o.batch_size, "images per batch, -1 = AutoBatch (measured)");
  cmd->add_option("--nbs", o.nbs, "nominal batch: gradients of round(nbs/batch) batches per optimizer step");
  cmd->add_option("--lr-scale", o.lr_scale, "scale lr0 when batch x accumulation passes --nbs: none, linear or sqrt")
      ->check(CLI::IsMember({"none", "linear", "sqrt"}));
  add_amp_flag(cmd, o.amp, "mixed precision: auto (measured), fp16 (CUDA), bf16 or off");
  cmd->add_flag("--rect", o.rect, "rectangular training");
  cmd->add_option("--cache", o.cache,
                  "cache images: ram (when given alone), disk or none; default auto = ram when the images take "
                  "under 1/8 of the free memory")
      ->expected(0, 1)
      ->default_str("ram");
  cmd->add_option("--device", o.device, "cuda device: 0, cuda:1, 0,1,2,3 (one process per GPU), or cpu; default: a GPU when there is one");
  cmd->add_flag("--fast", o.fast, "GPU: cuDNN autotuning and non-deterministic kernels (faster; runs no longer repeat bit for bit)");
  cmd->add_flag("--multi-scale", o.multi_scale, "vary image size +/- 50%");
  cmd->add_flag("--single-cls", o.single_cls, "train multi-class data as single-class");
  cmd->add_option("--optimizer", o.optimizer, "auto, SGD, Adam, AdamW or MuSGD (auto: SGD for YOLOv5 models, Ultralytics' rule for YOLOv8/YOLO11)")
      ->check(CLI::IsMember({"auto", "SGD", "Adam", "AdamW", "MuSGD"}));
  cmd->add_option("--workers", workers, "loader threads, or auto");
  cmd->add_option("--prefetch", o.prefetch, "batches prepared ahead of the model");
  add_run_folder_flags(cmd, o.project, o.name, o.exist_ok);
  cmd->add_option("--freeze", o.freeze, "freeze layers: backbone=10, first3=0 1 2")->expected(1, -1);
  cmd->add_option("--seed", o.seed, "global training seed");
  cmd->add_flag("--no-progress", no_progress, "plain log lines instead of progress bars");
  cmd->add_flag("!--no-scan", o.scan, "skip the dataset health check before training (kestrel scan)");
  cmd->add_flag("--sync-bn", o.sync_bn, "data parallel: BatchNorm statistics over the global batch (SyncBatchNorm)");
  cmd->add_option("--dist-timeout", o.dist_timeout, "data parallel: seconds a process waits for the others before it stops");
}

void finish_train_options(TrainOptions& o, const std::string& workers, bool no_progress) {
  o.workers = workers == "auto" ? -1 : std::stoi(workers);
  o.progress = !no_progress;
  if (o.data.empty() && o.cfg.empty() && o.weights.empty()) o.cfg = "yolov5n.yaml";  // the demo's model
}

}  // namespace kestrel::cli
