// kestrel val: val.py's flags -> run_val (src/val/val_run.h).
#include "commands.h"
#include "flags.h"
#include "val/val_run.h"

namespace kestrel::cli {

void register_val(CLI::App& app) {
  static ValRunOptions o;
  static bool no_progress = false;
  auto* cmd = add_command(app, "val", "Validate weights on a dataset (mAP@0.5, mAP@0.5:0.95, per class)", [] {
    o.val.progress = !no_progress;
    run_val(o);
    return 0;
  });
  add_model_flags(cmd, o.weights, o.cfg, o.device);
  cmd->add_option("--data", o.data, "data.yaml")->required();
  cmd->add_option("--imgsz,--img,--img-size", o.val.img_size, "inference size (pixels)");
  add_inference_flags(cmd, o.val.conf_thres, o.val.iou_thres, o.val.max_det, o.half);
  cmd->add_option("--batch-size,--batch", o.batch_size, "batch size (default: 32 for YOLOv5 models, 16 for Ultralytics')");
  cmd->add_option("--task", o.task, "val, train or test split")->check(CLI::IsMember({"val", "train", "test"}));
  cmd->add_option("--workers", o.val.workers, "loader threads");
  cmd->add_flag("--single-cls", o.val.single_cls, "treat as single-class dataset");
  cmd->add_flag("--verbose", o.verbose, "report mAP by class");
  cmd->add_flag("--no-progress", no_progress, "no progress bar");
  add_run_folder_flags(cmd, o.project, o.name, o.exist_ok);
  cmd->add_flag("--save-txt", o.save_txt, "save results to labels/*.txt");
  cmd->add_flag("--save-conf", o.save_conf, "save confidences in --save-txt labels");
  cmd->add_flag("--save-json", o.save_json, "save a COCO results JSON of the detections");
  cmd->add_flag("--noplots", o.noplots, "no confusion matrix, curves or batch pictures");
}

}  // namespace kestrel::cli
