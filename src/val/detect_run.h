// `kestrel detect` as a library call: detect.py over a source (an image, a video, a folder, a *.txt
// list) with given weights, writing runs/detect/expN with annotated images and videos (<stem>.mp4),
// with save_txt YOLO txt results (labels/<stem>.txt, labels/<stem>_<frame>.txt for video frames),
// and with save_crop each box's picture (crops/<class>/<stem>.jpg). Unreadable images are skipped
// and named; the per-image and "Speed:" lines are detect.py's.
#pragma once
#include <string>

#include "val/detect.h"

namespace kestrel {

struct DetectRunOptions {
  std::string weights, cfg, source, device;  // "" = GPU 0 when there is one
  std::string project = "runs/detect", name = "exp";
  bool exist_ok = false;
  DetectOptions detect;
  bool half = false;  // --half: detect.precision from inference_precision
  bool save_txt = false, save_conf = false, save_crop = false, nosave = false, hide_labels = false, hide_conf = false;
  int line_thickness = 3;
};

struct DetectRunSummary {
  std::string save_dir;
  size_t images = 0, frames = 0, skipped = 0, label_files = 0, crops = 0;
};

DetectRunSummary run_detect(const DetectRunOptions& options);

}  // namespace kestrel
