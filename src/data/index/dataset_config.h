// YOLOv5 data.yaml: dataset root, train/val/test sources and class names.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace kestrel {

struct DatasetConfig {
  std::string yaml_path, root;  // root: the resolved `path` (absolute)
  std::vector<std::string> train, val;  // absolute sources: folders, *.txt list files or image files
  std::vector<std::string> names;
  int nc = 0;
  std::vector<std::string> test;  // optional split
};

// A data.yaml problem; the message names the file (and the line when known).
struct DatasetConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Rules:
// - `path`: absolute stays; a relative one is resolved against the yaml's folder, or against the current
//   directory when it does not exist there; absent means the yaml's folder. Paths are normalised lexically
//   (symlinks are kept, so a symlinked images/ folder still finds its labels/ beside it).
// - `train`/`val` (required) and `test` (optional): a string or a list, each relative to `path`; as in
//   YOLOv5, a missing "../x" falls back to "x". An entry may name a split of a pack: "coco128.kpack#train".
// - `names`: a list, or a map {0: a, 1: b, ...} with keys 0..n-1. `nc` is derived from names when absent;
//   a mismatch is an error. With `nc` but no `names`, names are class0, class1, ...
DatasetConfig load_dataset_config(const std::string& yaml_path);

}  // namespace kestrel
