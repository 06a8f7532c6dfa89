// The detect loop: load the model once, then per image or video frame: detect, print, save.
#include "val/detect_run.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <opencv2/imgcodecs.hpp>

#include "core/cpu_cores.h"
#include "data/io/image_decode.h"
#include "device/device.h"
#include "model/weights.h"
#include "report/run_dir.h"
#include "val/detect_sources.h"
#include "val/video_reader.h"

namespace fs = std::filesystem;

namespace kestrel {

namespace {

class DetectLoop {
 public:
  DetectLoop(const DetectRunOptions& o, DetectRunSummary& s) : o_(o), s_(s), device_(parse_device(o.device)) {
    model_ = load_inference_model(o.weights, o.cfg, device_);
    options_ = o.detect;
    const int stride = static_cast<int>(model_->stride().empty() ? 32 : model_->stride().back());
    options_.img_h = check_img_size(options_.img_h, stride, "height");
    options_.img_w = check_img_size(options_.img_w, stride, "width");
    options_.precision = inference_precision(o.half, device_);
    if (o.half) std::cout << "--half: " << precision_name(options_.precision) << " autocast inference\n";
    s_.save_dir = increment_path(o.project + "/" + o.name, o.exist_ok, "", /*mkdir=*/true);
    if (o.save_txt) fs::create_directories(s_.save_dir + "/labels");
  }

  // One picture: detect, print detect.py's line (`what` names it), write txt and crops, annotate.
  void frame(cv::Mat& image, const std::string& what, const std::string& txt_stem, const std::string& crop_stem) {
    const Detections d = detect_image(*model_, image, options_, device_);
    pre_ += d.ms_pre, inf_ += d.ms_inference, nms_ += d.ms_nms;
    std::printf("%s: %dx%d %s%.1fms\n", what.c_str(), d.input_h, d.input_w, summarize_detections(d.boxes, model_->names()).c_str(),
                d.ms_inference);
    if (o_.save_txt && d.boxes.size(0)) {
      std::ofstream(s_.save_dir + "/labels/" + txt_stem + ".txt") << detections_to_yolo_txt(d.boxes, image.rows, image.cols, o_.save_conf);
      ++s_.label_files;
    }
    if (o_.save_crop) save_crops(image, d.boxes, crop_stem);
    if (!o_.nosave) draw_detections(image, d.boxes, model_->names(), o_.line_thickness, o_.hide_labels, o_.hide_conf);
  }

  void speed_line(size_t pictures) const {
    if (!pictures) return;
    const double n = static_cast<double>(pictures);
    std::printf("Speed: %.1fms pre-process, %.1fms inference, %.1fms NMS per image at shape (1, 3, %d, %d)\n", pre_ / n, inf_ / n,
                nms_ / n, options_.img_h, options_.img_w);
  }

 private:
  // crops/<class name>/<stem>.jpg, numbered as increment_path when the name is taken; cut from the
  // picture before it is annotated, as detect.py's copy.
  void save_crops(const cv::Mat& image, const torch::Tensor& boxes, const std::string& stem) {
    const auto b = boxes.accessor<float, 2>();
    for (int64_t i = boxes.size(0) - 1; i >= 0; --i) {
      const cv::Mat crop = crop_box(image, b[i][0], b[i][1], b[i][2], b[i][3]);
      if (crop.empty()) continue;
      const int cls = static_cast<int>(b[i][5]);
      const std::vector<std::string>& names = model_->names();
      const std::string dir = s_.save_dir + "/crops/" + path_component(cls < static_cast<int>(names.size()) ? names[cls] : std::to_string(cls));
      fs::create_directories(dir);
      const std::string path = increment_path(dir + "/" + stem + ".jpg");
      if (!cv::imwrite(path, crop)) std::cerr << "WARNING: could not write " << path << "\n";
      else ++s_.crops;
    }
  }

  const DetectRunOptions& o_;
  DetectRunSummary& s_;
  torch::Device device_;
  DetectionModel model_{nullptr};
  DetectOptions options_;
  double pre_ = 0, inf_ = 0, nms_ = 0;
};

void detect_image_file(DetectLoop& loop, const DetectRunOptions& o, DetectRunSummary& s, const std::string& path,
                       const std::string& what) {
  cv::Mat image;
  try {
    image = decode_image(path);
  } catch (const std::exception& e) {
    std::cerr << "WARNING: skipping " << e.what() << "\n";
    ++s.skipped;
    return;
  }
  const std::string stem = fs::path(path).stem().string();
  loop.frame(image, what, stem, stem);
  ++s.images;
  if (o.nosave) return;
  const std::string out = s.save_dir + "/" + fs::path(path).filename().string();
  if (!cv::imwrite(out, image)) std::cerr << "WARNING: could not write " << out << "\n";
}

// A video frame by frame, written as <stem>.mp4 (mp4v) at the source's frame rate.
void detect_video(DetectLoop& loop, const DetectRunOptions& o, DetectRunSummary& s, const std::string& path,
                  const std::string& what) {
  VideoReader video(path);
  if (!video.error().empty()) {
    std::cerr << "WARNING: skipping " << path << ": " << video.error() << "\n";
    ++s.skipped;
    return;
  }
  const std::string total = video.frame_count() ? std::to_string(video.frame_count()) : "?";
  const std::string stem = fs::path(path).stem().string();
  const std::string out = s.save_dir + "/" + stem + ".mp4";
  cv::VideoWriter writer;
  cv::Mat frame;
  int n = 0;
  while (video.next(frame)) {
    const std::string tag = "_" + std::to_string(++n);
    loop.frame(frame, what + " (frame " + std::to_string(n) + "/" + total + ") " + path, stem + tag, stem);
    ++s.frames;
    if (o.nosave) continue;
    if (!writer.isOpened() &&
        !writer.open(out, cv::VideoWriter::fourcc('m', 'p', '4', 'v'), video.fps(), frame.size()))
      throw std::runtime_error(out + ": OpenCV cannot write this video");
    writer.write(frame);
  }
  if (!video.error().empty()) std::cerr << "WARNING: " << path << ": stopped after " << n << " frames: " << video.error() << "\n";
  else if (!n) std::cerr << "WARNING: " << path << ": no frames could be read\n";
}

}  // namespace

DetectRunSummary run_detect(const DetectRunOptions& o) {
  const std::vector<DetectSource> sources = list_detect_sources(o.source);
  torch::set_num_threads(static_cast<int>(usable_cores()));
  DetectRunSummary s;
  DetectLoop loop(o, s);
  for (size_t i = 0; i < sources.size(); ++i) {
    const std::string what = (sources[i].video ? "video " : "image ") + std::to_string(i + 1) + "/" + std::to_string(sources.size());
    if (sources[i].video) detect_video(loop, o, s, sources[i].path, what);
    else detect_image_file(loop, o, s, sources[i].path, what + " " + sources[i].path);
  }
  loop.speed_line(s.images + s.frames);
  if (s.skipped) std::printf("%zu unreadable source%s skipped\n", s.skipped, s.skipped == 1 ? "" : "s");
  if (o.save_txt || !o.nosave || o.save_crop) {
    std::printf("Results saved to %s", s.save_dir.c_str());
    if (o.save_txt)
      std::printf(", %zu label%s saved to %s/labels", s.label_files, s.label_files == 1 ? "" : "s", s.save_dir.c_str());
    if (o.save_crop) std::printf(", %zu crop%s in %s/crops", s.crops, s.crops == 1 ? "" : "s", s.save_dir.c_str());
    std::printf("\n");
  }
  return s;
}

}  // namespace kestrel
