// kestrel profile: the train.py flags, then N timed training steps and a verdict on where the time goes.
#include "commands.h"
#include "flags.h"
#include "train/trainer.h"

namespace kestrel::cli {

void register_profile(CLI::App& app) {
  static TrainOptions o;
  static std::string workers = "auto";
  static bool no_progress = false;
  static int warmup_steps = 0;
  o.project = "runs/profile";
  o.max_steps = 30;
  // --epochs stays train's default: it picks the optimizer (`auto`) and schedule the timed steps should
  // have; the step budget ends the run long before.
  o.noval = true;
  o.img_size = 640;
  auto* cmd = add_command(app, "profile", "Run N training steps of a configuration and report where the time goes", [] {
    finish_train_options(o, workers, no_progress);
    o.untimed_steps = warmup_steps;
    o.max_steps += warmup_steps;
    train(o);
    return 0;
  });
  add_train_flags(cmd, o, workers, no_progress);
  cmd->add_option("--imgsz,--img,--img-size", o.img_size, "image size (pixels)");
  cmd->add_option("--steps", o.max_steps, "training steps to time");
  cmd->add_option("--epochs", o.epochs, "epochs of the training to profile (they choose --optimizer auto's pick and the schedule)");
  cmd->add_option("--warmup-steps", warmup_steps,
                  "steps run before the timed ones and left out of the figures (the first steps choose kernels and grow the heap)");
  cmd->add_flag("--resident", o.resident_batch,
                "reuse the first batch for every step: the compute limit, to compare with a normal profile");
}

}  // namespace kestrel::cli
