// kestrel detect: detect.py's flags -> run_detect (src/val/detect_run.h).
#include "commands.h"
#include "flags.h"
#include "val/detect_run.h"

namespace kestrel::cli {

void register_detect(CLI::App& app) {
  static DetectRunOptions o;
  static std::vector<int> imgsz{640};
  auto* cmd = add_command(app, "detect", "Detect objects in images and videos with given weights (as detect.py)", [] {
    o.detect.img_h = imgsz.front();
    o.detect.img_w = imgsz.back();  // one size: square, as detect.py's imgsz *= 2
    run_detect(o);
    return 0;
  });
  add_model_flags(cmd, o.weights, o.cfg, o.device);
  cmd->add_option("--source", o.source, "an image, a video, a folder, or a *.txt list of images")->required();
  cmd->add_option("--imgsz,--img,--img-size", imgsz, "inference size: one side, or H W")->expected(1, 2)->check(CLI::PositiveNumber);
  add_inference_flags(cmd, o.detect.conf_thres, o.detect.iou_thres, o.detect.max_det, o.half);
  cmd->add_flag("--save-txt", o.save_txt, "save results to labels/*.txt");
  cmd->add_flag("--save-conf", o.save_conf, "save confidences in --save-txt labels");
  cmd->add_flag("--save-crop", o.save_crop, "save each box's picture to crops/<class>/");
  cmd->add_flag("--nosave", o.nosave, "do not save annotated images");
  cmd->add_option("--classes", o.detect.classes, "filter by class: --classes 0, or --classes 0 2 3")->expected(1, -1);
  cmd->add_flag("--agnostic-nms", o.detect.agnostic, "class-agnostic NMS");
  add_run_folder_flags(cmd, o.project, o.name, o.exist_ok);
  cmd->add_option("--line-thickness", o.line_thickness, "bounding box thickness (pixels)");
  cmd->add_flag("--hide-labels", o.hide_labels, "hide labels");
  cmd->add_flag("--hide-conf", o.hide_conf, "hide confidences");
}

}  // namespace kestrel::cli
