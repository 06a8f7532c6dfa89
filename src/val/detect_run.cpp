// The detect loop: load the model once, then decode, detect, print, save per image.
#include "val/detect_run.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <opencv2/imgcodecs.hpp>
#include <thread>

#include "data/index/label_index.h"
#include "data/io/image_decode.h"
#include "model/weights.h"
#include "report/run_dir.h"
#include "val/batch_tensors.h"

namespace fs = std::filesystem;

namespace kestrel {

DetectRunSummary run_detect(const DetectRunOptions& o) {
  const std::vector<std::string> files = list_image_files({o.source});
  torch::set_num_threads(static_cast<int>(std::thread::hardware_concurrency()));
  const torch::Device dev = parse_device(o.device);
  DetectionModel model = load_inference_model(o.weights, o.cfg, dev);
  DetectOptions options = o.detect;
  options.precision = inference_precision(o.half, dev);
  if (o.half) std::cout << "--half: " << precision_name(options.precision) << " autocast inference\n";
  const std::vector<std::string>& names = model->names();

  DetectRunSummary s;
  s.save_dir = increment_path(o.project + "/" + o.name, o.exist_ok, "", /*mkdir=*/true);
  if (o.save_txt) fs::create_directories(s.save_dir + "/labels");
  double pre = 0, inf = 0, nms = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string& path = files[i];
    cv::Mat image;
    try {
      image = decode_image(path);
    } catch (const std::exception& e) {
      std::cerr << "WARNING: skipping " << e.what() << "\n";
      ++s.skipped;
      continue;
    }
    const Detections d = detect_image(*model, image, options, dev);
    pre += d.ms_pre, inf += d.ms_inference, nms += d.ms_nms, ++s.images;
    std::printf("image %zu/%zu %s: %dx%d %s%.1fms\n", i + 1, files.size(), path.c_str(), d.input_h, d.input_w,
                summarize_detections(d.boxes, names).c_str(), d.ms_inference);
    if (o.save_txt && d.boxes.size(0)) {
      const std::string txt = s.save_dir + "/labels/" + fs::path(path).stem().string() + ".txt";
      std::ofstream(txt) << detections_to_yolo_txt(d.boxes, image.rows, image.cols, o.save_conf);
      ++s.label_files;
    }
    if (!o.nosave) {
      draw_detections(image, d.boxes, names, o.line_thickness, o.hide_labels, o.hide_conf);
      const std::string out = s.save_dir + "/" + fs::path(path).filename().string();
      if (!cv::imwrite(out, image)) std::cerr << "WARNING: could not write " << out << "\n";
    }
  }
  if (s.images)
    std::printf("Speed: %.1fms pre-process, %.1fms inference, %.1fms NMS per image at shape (1, 3, %d, %d)\n", pre / s.images,
                inf / s.images, nms / s.images, o.detect.img_size, o.detect.img_size);
  if (s.skipped) std::printf("%zu unreadable image%s skipped\n", s.skipped, s.skipped == 1 ? "" : "s");
  if (o.save_txt || !o.nosave) {
    std::printf("Results saved to %s", s.save_dir.c_str());
    if (o.save_txt)
      std::printf(", %zu label%s saved to %s/labels", s.label_files, s.label_files == 1 ? "" : "s", s.save_dir.c_str());
    std::printf("\n");
  }
  return s;
}

}  // namespace kestrel
