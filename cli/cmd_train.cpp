// kestrel train: YOLOv5 train.py's flags -> TrainOptions -> train().
#include "commands.h"
#include "distributed/launch.h"
#include "flags.h"
#include "train/trainer.h"

namespace kestrel::cli {

void register_train(CLI::App& app) {
  static TrainOptions o;
  static std::string workers = "auto";
  static bool no_progress = false;
  static LaunchOptions launch;
  auto* cmd = add_command(app, "train", "Train a YOLOv5 detector (no --data: the built-in demo dataset)", [] {
    if (launch.nproc_per_node == 1) launch.nproc_per_node = device_list_size(o.device);  // --device 0,1,2,3
    if (should_launch(launch)) return launch_local_ranks(launch, own_arguments());  // the ranks train
    finish_train_options(o, workers, no_progress);
    // 128 + the signal, as a shell reports it: 130 for Ctrl-C, 143 for SIGTERM. last.pt is saved either way.
    const TrainResult r = train(o);
    return r.interrupted ? 128 + r.stop_signal : 0;
  });
  add_train_flags(cmd, o, workers, no_progress);
  auto* epochs = cmd->add_option("--epochs", o.epochs, "total training epochs");
  auto* img = cmd->add_option("--imgsz,--img,--img-size", o.img_size, "train and val image size (pixels)");
  cmd->add_option("--resume", o.resume, "resume the most recent run (or the given last.pt)")->expected(0, 1)->default_str("auto");
  cmd->add_flag("--nosave", o.nosave, "only save the final checkpoint");
  cmd->add_flag("--noval", o.noval, "only validate the final epoch");
  cmd->add_flag("--noplots", o.noplots, "save no plot files");
  cmd->add_flag("--noautoanchor", o.noautoanchor, "keep the model's anchors (no AutoAnchor check)");
  cmd->add_flag("--cos-lr", o.cos_lr, "cosine LR scheduler");
  cmd->add_option("--label-smoothing", o.label_smoothing, "label smoothing epsilon");
  cmd->add_option("--patience", o.patience, "early stopping patience (epochs without improvement)");
  cmd->add_option("--save-period", o.save_period, "save a checkpoint every x epochs (disabled if < 1)");
  cmd->add_option("--save-minutes", o.save_minutes,
                  "also write last.pt every N minutes mid-epoch, in the background (a crash loses minutes, not the epoch)");
  cmd->add_option("--close-mosaic", o.close_mosaic, "turn mosaic off for the last N epochs (default: YOLOv5 models 0, YOLOv8/YOLO11 10)");
  cmd->add_option("--val-period", o.val_period, "validate every N epochs (the last one always)");
  cmd->add_option("--sparsity", o.sparsity, "BN-sparsity training: S x sign(gamma) on BatchNorm scales (e.g. 1e-4), for kestrel prune");
  cmd->add_flag("--sparsity-decay", o.sparsity_decay, "lower --sparsity linearly to a tenth over the run");
  cmd->add_option("--sparsity-target", o.sparsity_target,
                  "penalize only the channels `kestrel prune --ratio R` would remove (re-chosen each epoch)")
      ->check(CLI::Range(0.0, 0.95));
  cmd->add_option("--sparsity-cost-weight", o.sparsity_cost_weight, "...a prune that ranks channels by |gamma| / cost^A (prune --cost-weight)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--sparsity-multiple", o.sparsity_multiple, "...a prune that rounds kept widths up to this multiple (prune --multiple)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--nproc-per-node", launch.nproc_per_node, "data parallel: processes to start on this machine (torchrun's flag)");
  cmd->add_option("--nnodes", launch.nnodes, "data parallel: machines in the job");
  cmd->add_option("--node-rank", launch.node_rank, "data parallel: this machine's index, 0 for the one at --master-addr");
  cmd->add_option("--master-addr", launch.master_addr, "data parallel: address of node 0, which hosts the rendezvous");
  cmd->add_option("--master-port", launch.master_port, "data parallel: a free TCP port on node 0");
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

}  // namespace kestrel::cli
