// What `kestrel val --save-txt / --save-json` writes, as val.py's save_one_txt and save_one_json:
// labels/<stem>.txt per image with detections (normalised xywh, optional confidence), and one
// COCO results JSON of every detection: image_id from the file name (an int when it is all digits),
// category_id (COCO's 91-id numbering for COCO's own val2017, else the class index), a top-left
// x, y, w, h box in original pixels rounded to 3 decimals, and the score rounded to 5.
#pragma once
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <string>

#include "data/types.h"

namespace kestrel {

// The COCO category id of each of the 80 class indices (utils/general.py coco80_to_coco91_class).
const std::vector<int>& coco80_to_coco91();

// val.py's is_coco: a single val path ending in coco/val2017.txt.
bool is_coco_val(const std::vector<std::string>& val_paths);

class ValSaver {
 public:
  // `labels_dir` "" = no txt files; `json` false = no JSON.
  ValSaver(std::string labels_dir, bool save_conf, bool json, bool coco_ids);
  // One image's detections [k,6] (x1, y1, x2, y2, conf, cls) in original pixels.
  void add(const std::string& image_path, const torch::Tensor& predn, const LetterboxInfo& shape);
  // Writes the JSON array (atomically); returns the number of detections in it.
  size_t write_json(const std::string& path) const;
  size_t label_files() const { return label_files_; }

 private:
  std::string labels_dir_;
  bool save_conf_, json_, coco_ids_;
  nlohmann::json detections_ = nlohmann::json::array();
  size_t label_files_ = 0;
};

}  // namespace kestrel
