// kestrel tune: the train.py flags as the baseline, --budget and --steps -> run_tune (src/tune/tune_run.h).
#include "commands.h"
#include "flags.h"
#include "tune/tune_run.h"

namespace kestrel::cli {

void register_tune(CLI::App& app) {
  static TuneOptions o;
  static std::string workers = "auto", budget = "10m";
  static bool no_progress = false;
  o.base.project = "runs/tune";
  auto* cmd = add_command(app, "tune", "Measure each speed lever against your settings and print the fastest train command", [] {
    finish_train_options(o.base, workers, no_progress);
    o.budget_s = parse_budget(budget);
    run_tune(o);
    return 0;
  });
  add_train_flags(cmd, o.base, workers, no_progress);
  cmd->add_option("--epochs", o.base.epochs, "epochs of the final command");
  cmd->add_option("--imgsz,--img,--img-size", o.base.img_size, "train and val image size (pixels)");
  cmd->add_option("--val-period", o.base.val_period, "validate every N epochs (the baseline's)");
  cmd->add_flag("--noval", o.base.noval, "only validate the final epoch (the baseline's)");
  cmd->add_option("--budget", budget, "time for the whole tune: 600, 90s, 10m, 1h");
  cmd->add_option("--steps", o.steps, "timed training steps per trial")->check(CLI::Range(2, 1000));
}

}  // namespace kestrel::cli
