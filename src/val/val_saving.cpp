// --save-txt and --save-json for a validation (see val_saving.h).
#include "val/val_saving.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/atomic_file.h"
#include "val/detect.h"

namespace fs = std::filesystem;

namespace kestrel {

namespace {

double rounded(double v, double scale) { return std::round(v * scale) / scale; }

// Python's int(stem) when stem.isnumeric(), else the stem itself.
nlohmann::json image_id(const std::string& stem) {
  const bool digits = !stem.empty() && std::all_of(stem.begin(), stem.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (digits && stem.size() < 19) return std::stoll(stem);
  return stem;
}

}  // namespace

const std::vector<int>& coco80_to_coco91() {
  static const std::vector<int> ids = [] {
    std::vector<int> v;
    const std::vector<int> unused = {12, 26, 29, 30, 45, 66, 68, 69, 71, 83};  // ids COCO left out
    for (int id = 1; id <= 90; ++id)
      if (std::find(unused.begin(), unused.end(), id) == unused.end()) v.push_back(id);
    return v;
  }();
  return ids;
}

bool is_coco_val(const std::vector<std::string>& val_paths) {
  const std::string tail = "coco/val2017.txt";
  return val_paths.size() == 1 && val_paths[0].size() >= tail.size() &&
         val_paths[0].compare(val_paths[0].size() - tail.size(), tail.size(), tail) == 0;
}

ValSaver::ValSaver(std::string labels_dir, bool save_conf, bool json, bool coco_ids)
    : labels_dir_(std::move(labels_dir)), save_conf_(save_conf), json_(json), coco_ids_(coco_ids) {
  if (!labels_dir_.empty()) fs::create_directories(labels_dir_);
}

void ValSaver::add(const std::string& image_path, const torch::Tensor& predn_in, const LetterboxInfo& shape) {
  const torch::Tensor predn = predn_in.to(torch::kCPU, torch::kFloat32).contiguous();
  if (predn.size(0) == 0) return;  // val.py skips images without detections before saving
  const std::string stem = fs::path(image_path).stem().string();
  if (!labels_dir_.empty()) {
    const std::string path = labels_dir_ + "/" + stem + ".txt";
    std::ofstream out(path, std::ios::app);  // save_one_txt appends
    out << detections_to_yolo_txt(predn, shape.orig_h, shape.orig_w, save_conf_, /*reversed=*/false);
    if (!out) throw std::runtime_error(path + ": cannot write");
    ++label_files_;
  }
  if (!json_) return;
  const nlohmann::json id = image_id(stem);
  const auto p = predn.accessor<float, 2>();
  for (int64_t i = 0; i < predn.size(0); ++i) {
    const double x1 = p[i][0], y1 = p[i][1], w = p[i][2] - p[i][0], h = p[i][3] - p[i][1];
    const int cls = static_cast<int>(p[i][5]);
    const int category = coco_ids_ && cls < 80 ? coco80_to_coco91()[cls] : cls;
    detections_.push_back({{"image_id", id},
                           {"category_id", category},
                           {"bbox", {rounded(x1, 1e3), rounded(y1, 1e3), rounded(w, 1e3), rounded(h, 1e3)}},
                           {"score", rounded(p[i][4], 1e5)}});
  }
}

size_t ValSaver::write_json(const std::string& path) const {
  write_file_atomic(path, detections_.dump());
  return detections_.size();
}

}  // namespace kestrel
