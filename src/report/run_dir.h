// Run folders as YOLOv5 names them: runs/train/exp, exp2, exp3, ... (utils/general.py increment_path)
// with a weights/ subfolder for last.pt / best.pt.
#pragma once
#include <string>

namespace kestrel {

// YOLOv5's increment_path: `path` itself if it does not exist or exist_ok; otherwise the first of
// path{sep}2, path{sep}3, ... that does not exist (for an existing file the number goes before its
// extension: results.txt -> results2.txt). Creates the folder when mkdir is true.
std::string increment_path(const std::string& path, bool exist_ok = false, const std::string& sep = "",
                           bool mkdir = false);

// A name from the data (a class name from data.yaml or a checkpoint) as one folder or file name inside
// a run folder: '/', '\\' and control characters become '_', and "", "." and ".." become "_", so a
// hostile name ("../../etc") cannot place a file outside the run.
std::string path_component(const std::string& name);

struct RunDir {
  std::string save_dir;     // e.g. runs/train/exp3
  std::string weights_dir;  // save_dir/weights
  std::string last_pt() const { return weights_dir + "/last.pt"; }
  std::string best_pt() const { return weights_dir + "/best.pt"; }
  std::string results_csv() const { return save_dir + "/results.csv"; }
};

// train.py's run folder: increment_path(project/name, exist_ok), then creates save_dir/weights.
// Throws std::runtime_error when the folders cannot be created.
RunDir make_run_dir(const std::string& project = "runs/train", const std::string& name = "exp",
                    bool exist_ok = false);

}  // namespace kestrel
