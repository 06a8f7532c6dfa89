// kestrel prune: flags -> run_prune (src/prune/prune_run.h).
#include "commands.h"
#include "flags.h"
#include "prune/prune_run.h"

namespace kestrel::cli {

void register_prune(CLI::App& app) {
  static PruneRunOptions o;
  auto* cmd = add_command(app, "prune", "Remove the channels with the smallest BatchNorm |gamma| (after train --sparsity)", [] {
    run_prune(o);
    return 0;
  });
  cmd->add_option("--weights", o.weights, "a trained model: Kestrel checkpoint or YOLOv5 .pt")->required();
  cmd->add_option("--ratio", o.prune.ratio, "share of the prunable channels to remove")->check(CLI::Range(0.0, 0.95));
  cmd->add_option("--min-channels", o.prune.min_channels, "channels every layer keeps at least");
  cmd->add_option("--max-layer-cut", o.prune.max_layer_cut, "share of a layer's channels it may lose at most")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--multiple", o.prune.multiple, "kept channel counts rounded up to a multiple of this")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--cost-weight", o.prune.cost_weight,
                  "rank channels by |gamma| / cost^A: 0 by |gamma| alone, 1 by |gamma| per unit of compute "
                  "(a channel at stride 4 costs 16x one at stride 16)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--data", o.data, "data.yaml: mAP before and after");
  cmd->add_option("--imgsz,--img,--img-size", o.img_size, "image size of validation and the timed steps");
  cmd->add_option("--batch-size,--batch", o.batch_size, "batch of the timed training steps");
  add_amp_flag(cmd, o.amp, "precision of the timed steps: auto, bf16, fp16 or off");
  cmd->add_option("--device", o.device, "cuda device: 0, cuda:1, 0,1,2,3 (one process per GPU), or cpu; default: a GPU when there is one");
  cmd->add_option("--workers", o.workers, "loader threads of the validation");
  add_run_folder_flags(cmd, o.project, o.name, o.exist_ok);
}

}  // namespace kestrel::cli
