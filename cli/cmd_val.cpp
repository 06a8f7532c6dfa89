// kestrel val: val.py's flags -> Validator on a dataset split with given weights.
#include <iostream>

#include "commands.h"
#include "data/index/dataset_config.h"
#include "data/index/index_report.h"
#include "data/index/label_index.h"
#include "train/weights.h"
#include "val/batch_tensors.h"
#include "val/validator.h"

namespace kestrel::cli {

void register_val(CLI::App& app) {
  static std::string weights, data, task = "val", device = "cpu", cfg;
  static ValOptions vo;
  static bool verbose = false, no_progress = false;
  static int workers = 2;
  auto* cmd = add_command(app, "val", "Validate weights on a dataset (mAP@0.5, mAP@0.5:0.95, per class)", [] {
    const DatasetConfig dc = load_dataset_config(data);
    const auto& split = task == "train" ? dc.train : dc.val;
    DatasetIndex index = build_index(split, dc.nc, vo.single_cls);
    for (const auto& w : index.warnings) std::cerr << "WARNING: " << w << "\n";
    std::cout << task << ": " << format_index_stats(index.stats) << "\n";
    torch::set_num_threads(static_cast<int>(std::thread::hardware_concurrency()));
    const torch::Device dev = parse_device(device);
    DetectionModel model = load_inference_model(weights, cfg, dev);
    if (!vo.single_cls && model->nc() != dc.nc)
      throw std::runtime_error(weights + " (" + std::to_string(model->nc()) + " classes) was trained on other data than " + data +
                               " (" + std::to_string(dc.nc) + " classes): pass --weights and --data that were trained together");
    vo.workers = workers;
    vo.progress = !no_progress;
    Validator validator(index.records, model->names(), vo);
    const ValResult r = validator.run(*model, dev);
    std::cout << format_val_table(r.metrics, model->names(), verbose || (model->nc() < 50)) << format_val_speed(r, vo.img_size, vo.batch_size) << "\n";
    return 0;
  });
  cmd->add_option("--weights", weights, "YOLOv5 .pt or Kestrel checkpoint")->required();
  cmd->add_option("--data", data, "data.yaml")->required();
  cmd->add_option("--cfg", cfg, "model yaml when the weights carry none");
  cmd->add_option("--batch-size,--batch", vo.batch_size, "batch size");
  cmd->add_option("--imgsz,--img,--img-size", vo.img_size, "inference size (pixels)");
  cmd->add_option("--conf-thres", vo.conf_thres, "confidence threshold");
  cmd->add_option("--iou-thres", vo.iou_thres, "NMS IoU threshold");
  cmd->add_option("--max-det", vo.max_det, "maximum detections per image");
  cmd->add_option("--task", task, "val or train split")->check(CLI::IsMember({"val", "train"}));
  cmd->add_option("--device", device, "cpu, or cuda device: 0 or cuda:0");
  cmd->add_option("--workers", workers, "loader threads");
  cmd->add_flag("--single-cls", vo.single_cls, "treat as single-class dataset");
  cmd->add_flag("--verbose", verbose, "report mAP by class");
  cmd->add_flag("--half", vo.half, "FP16 inference (CUDA)");
  cmd->add_flag("--no-progress", no_progress, "no progress bar");
}

}  // namespace kestrel::cli
