// kestrel detect: detect.py's flags -> detections on images, annotated copies and YOLO txt files in
// runs/detect/expN.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <opencv2/imgcodecs.hpp>

#include "commands.h"
#include "data/io/image_decode.h"
#include "data/index/label_index.h"
#include "report/run_dir.h"
#include "train/weights.h"
#include "val/batch_tensors.h"
#include "val/detect.h"

namespace kestrel::cli {

namespace fs = std::filesystem;

void register_detect(CLI::App& app) {
  static std::string weights, source, cfg, device = "cpu", project = "runs/detect", name = "exp";
  static DetectOptions o;
  static bool save_txt = false, save_conf = false, nosave = false, exist_ok = false, hide_labels = false, hide_conf = false;
  static int line_thickness = 3;
  auto* cmd = add_command(app, "detect", "Detect objects in images with given weights (as detect.py)", [] {
    std::vector<std::string> files = list_image_files({source});
    torch::set_num_threads(static_cast<int>(std::thread::hardware_concurrency()));
    const torch::Device dev = parse_device(device);
    if (o.half && !dev.is_cuda()) throw std::runtime_error("--half needs a CUDA --device");
    DetectionModel model = load_inference_model(weights, cfg, dev);
    if (o.half) model->to(torch::kHalf);
    const std::vector<std::string>& names = model->names();

    const std::string save_dir = increment_path(project + "/" + name, exist_ok, "", /*mkdir=*/true);
    if (save_txt) fs::create_directories(save_dir + "/labels");
    double pre = 0, inf = 0, nms = 0;
    size_t done = 0, label_files = 0, skipped = 0;
    for (size_t i = 0; i < files.size(); ++i) {
      const std::string& path = files[i];
      cv::Mat image;
      try {
        image = decode_image(path);
      } catch (const std::exception& e) {
        std::cerr << "WARNING: skipping " << e.what() << "\n";
        ++skipped;
        continue;
      }
      const Detections d = detect_image(*model, image, o, dev);
      pre += d.ms_pre, inf += d.ms_inference, nms += d.ms_nms, ++done;
      std::printf("image %zu/%zu %s: %dx%d %s%.1fms\n", i + 1, files.size(), path.c_str(), d.input_h, d.input_w,
                  summarize_detections(d.boxes, names).c_str(), d.ms_inference);
      const fs::path stem = fs::path(path).stem();
      if (save_txt && d.boxes.size(0)) {
        std::ofstream(save_dir + "/labels/" + stem.string() + ".txt") << detections_to_yolo_txt(d.boxes, image.rows, image.cols, save_conf);
        ++label_files;
      }
      if (!nosave) {
        draw_detections(image, d.boxes, names, line_thickness, hide_labels, hide_conf);
        const std::string out = save_dir + "/" + fs::path(path).filename().string();
        if (!cv::imwrite(out, image)) std::cerr << "WARNING: could not write " << out << "\n";
      }
    }
    if (done)
      std::printf("Speed: %.1fms pre-process, %.1fms inference, %.1fms NMS per image at shape (1, 3, %d, %d)\n", pre / done,
                  inf / done, nms / done, o.img_size, o.img_size);
    if (skipped) std::printf("%zu unreadable image%s skipped\n", skipped, skipped == 1 ? "" : "s");
    if (save_txt || !nosave) {
      std::printf("Results saved to %s", save_dir.c_str());
      if (save_txt) std::printf(", %zu label%s saved to %s/labels", label_files, label_files == 1 ? "" : "s", save_dir.c_str());
      std::printf("\n");
    }
    return 0;
  });
  cmd->add_option("--weights", weights, "YOLOv5 .pt or Kestrel checkpoint")->required();
  cmd->add_option("--source", source, "an image, a folder of images, or a *.txt list of images")->required();
  cmd->add_option("--cfg", cfg, "model yaml when the weights carry none");
  cmd->add_option("--imgsz,--img,--img-size", o.img_size, "inference size (pixels)");
  cmd->add_option("--conf-thres", o.conf_thres, "confidence threshold");
  cmd->add_option("--iou-thres", o.iou_thres, "NMS IoU threshold");
  cmd->add_option("--max-det", o.max_det, "maximum detections per image");
  cmd->add_option("--device", device, "cpu, or cuda device: 0 or cuda:0");
  cmd->add_flag("--save-txt", save_txt, "save results to labels/*.txt");
  cmd->add_flag("--save-conf", save_conf, "save confidences in --save-txt labels");
  cmd->add_flag("--nosave", nosave, "do not save annotated images");
  cmd->add_option("--classes", o.classes, "filter by class: --classes 0, or --classes 0 2 3")->expected(1, -1);
  cmd->add_flag("--agnostic-nms", o.agnostic, "class-agnostic NMS");
  cmd->add_option("--project", project, "save results to project/name");
  cmd->add_option("--name", name, "save results to project/name");
  cmd->add_flag("--exist-ok", exist_ok, "existing project/name ok, do not increment");
  cmd->add_option("--line-thickness", line_thickness, "bounding box thickness (pixels)");
  cmd->add_flag("--hide-labels", hide_labels, "hide labels");
  cmd->add_flag("--hide-conf", hide_conf, "hide confidences");
  cmd->add_flag("--half", o.half, "FP16 inference (CUDA)");
}

}  // namespace kestrel::cli
