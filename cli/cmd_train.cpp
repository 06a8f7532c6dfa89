// kestrel train: YOLOv5 train.py's flags -> TrainOptions -> train().
#include <iostream>

#include "commands.h"
#include "train/trainer.h"

namespace kestrel::cli {

namespace {

// The train.py flags, shared by `train` and `profile` (which runs the same configuration briefly).
void add_train_flags(CLI::App* cmd, TrainOptions& o, std::string& workers, bool& no_progress) {
  cmd->add_option("--weights", o.weights, "initial weights: a YOLOv5 .pt or a Kestrel checkpoint ('' = from scratch)");
  cmd->add_option("--cfg", o.cfg, "model yaml (path or built-in: yolov5n/s/m/l/x.yaml)");
  cmd->add_option("--data", o.data, "data.yaml (default: the built-in demo dataset)");
  cmd->add_option("--hyp", o.hyp, "hyperparameters yaml (default: hyp.scratch-low)");
  cmd->add_option("--batch-size,--batch", o.batch_size, "images per batch");
  cmd->add_flag("--rect", o.rect, "rectangular training");
  cmd->add_option("--cache", o.cache,
                  "cache images: ram (when given alone), disk or none; default auto = ram when the images take "
                  "under 1/8 of the free memory")
      ->expected(0, 1)
      ->default_str("ram");
  cmd->add_option("--device", o.device, "cpu, or cuda device: 0 or cuda:0");
  cmd->add_flag("--multi-scale", o.multi_scale, "vary image size +/- 50%");
  cmd->add_flag("--single-cls", o.single_cls, "train multi-class data as single-class");
  cmd->add_option("--optimizer", o.optimizer, "SGD, Adam or AdamW")->check(CLI::IsMember({"SGD", "Adam", "AdamW"}));
  cmd->add_option("--workers", workers, "loader threads, or auto");
  cmd->add_option("--prefetch", o.prefetch, "batches prepared ahead of the model");
  cmd->add_option("--project", o.project, "save to project/name");
  cmd->add_option("--name", o.name, "save to project/name");
  cmd->add_flag("--exist-ok", o.exist_ok, "existing project/name ok, do not increment");
  cmd->add_option("--freeze", o.freeze, "freeze layers: backbone=10, first3=0 1 2")->expected(1, -1);
  cmd->add_option("--seed", o.seed, "global training seed");
  cmd->add_flag("--no-progress", no_progress, "plain log lines instead of progress bars");
  cmd->add_flag("!--no-scan", o.scan, "skip the dataset health check before training (kestrel scan)");
}

void finish_options(TrainOptions& o, const std::string& workers, bool no_progress) {
  o.workers = workers == "auto" ? -1 : std::stoi(workers);
  o.progress = !no_progress;
  if (o.data.empty() && o.cfg.empty() && o.weights.empty()) o.cfg = "yolov5n.yaml";  // the demo's model
}

}  // namespace

void register_train(CLI::App& app) {
  static TrainOptions o;
  static std::string workers = "auto";
  static bool no_progress = false;
  auto* cmd = add_command(app, "train", "Train a YOLOv5 detector (no --data: the built-in demo dataset)", [] {
    finish_options(o, workers, no_progress);
    return train(o).interrupted ? 130 : 0;  // 130: what a shell reports for Ctrl-C
  });
  add_train_flags(cmd, o, workers, no_progress);
  auto* epochs = cmd->add_option("--epochs", o.epochs, "total training epochs");
  auto* img = cmd->add_option("--imgsz,--img,--img-size", o.img_size, "train and val image size (pixels)");
  cmd->add_option("--resume", o.resume, "resume the most recent run (or the given last.pt)")->expected(0, 1)->default_str("auto");
  cmd->add_flag("--nosave", o.nosave, "only save the final checkpoint");
  cmd->add_flag("--noval", o.noval, "only validate the final epoch");
  cmd->add_flag("--noplots", o.noplots, "save no plot files");
  cmd->add_flag("--cos-lr", o.cos_lr, "cosine LR scheduler");
  cmd->add_option("--label-smoothing", o.label_smoothing, "label smoothing epsilon");
  cmd->add_option("--patience", o.patience, "early stopping patience (epochs without improvement)");
  cmd->add_option("--save-period", o.save_period, "save a checkpoint every x epochs (disabled if < 1)");
  cmd->add_option("--save-minutes", o.save_minutes,
                  "also write last.pt every N minutes mid-epoch, in the background (a crash loses minutes, not the epoch)");
  cmd->add_option("--close-mosaic", o.close_mosaic, "turn mosaic off for the last N epochs");
  cmd->add_option("--val-period", o.val_period, "validate every N epochs (the last one always)");
  auto* close_mosaic = cmd->get_option("--close-mosaic");
  // Demo defaults, applied only to flags not given: 60 epochs at 256 px, the last 10 without mosaic,
  // reached mAP@0.5 0.79 on the demo's val split in 8 minutes on 2 CPU cores (50 epochs: 0.53 in 6).
  cmd->callback([epochs, img, close_mosaic] {
    if (o.data.empty()) {
      if (!img->count()) o.img_size = 256;
      if (!epochs->count()) o.epochs = 60;
      if (!close_mosaic->count()) o.close_mosaic = 10;
    }
  });
}

void register_profile(CLI::App& app) {
  static TrainOptions o;
  static std::string workers = "auto";
  static bool no_progress = false;
  o.project = "runs/profile";
  o.max_steps = 30;
  o.epochs = 1000;  // the step budget ends the run
  o.noval = true;
  o.img_size = 640;
  auto* cmd = add_command(app, "profile", "Run N training steps of a configuration and report where the time goes", [] {
    finish_options(o, workers, no_progress);
    train(o);
    return 0;
  });
  add_train_flags(cmd, o, workers, no_progress);
  cmd->add_option("--imgsz,--img,--img-size", o.img_size, "image size (pixels)");
  cmd->add_option("--steps", o.max_steps, "training steps to time");
  cmd->add_flag("--resident", o.resident_batch,
                "reuse the first batch for every step: the compute limit, to compare with a normal profile");
}

}  // namespace kestrel::cli
