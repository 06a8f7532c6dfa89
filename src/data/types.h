// Plain data types shared by the data pipeline and everything downstream of it.
// No LibTorch here: a batch leaves the loader as one contiguous uint8 NCHW buffer plus a flat
// label array, and wrapping those in tensors is the trainer's business.
#pragma once
#include <cstdint>
#include <memory_resource>
#include <string>
#include <vector>

namespace kestrel {

// One YOLO label row: class and normalized centre-x, centre-y, width, height (float32, as YOLOv5).
struct Label {
  float cls = 0, x = 0, y = 0, w = 0, h = 0;
};

// One image of a dataset with its parsed labels. width/height are the original (EXIF-corrected)
// pixel size, read from the header when the index is built.
struct ImageRecord {
  std::string image_path;
  std::string label_path;  // empty when the image has no label file (a background image)
  std::vector<Label> labels;
  int width = 0, height = 0;
};

// Geometry of a letterboxed image, needed to map predictions back to original pixels.
struct LetterboxInfo {
  int orig_h = 0, orig_w = 0;
  double ratio_h = 1, ratio_w = 1;  // (resized / original); YOLOv5's `ratio`
  double pad_w = 0, pad_h = 0;      // half-padding (dw, dh), YOLOv5's `pad`; whole pixels in Ultralytics' geometry
  bool gain_per_axis = false;       // map x back with ratio_w (Ultralytics); YOLOv5 uses ratio_h for both axes
};

// A batch as the loader hands it over. `pixels` is n*3*h*w uint8 in RGB NCHW order, from the memory
// resource the consumer chose (pinned host memory when the batch goes to a GPU; the heap by default).
// `labels` holds n_labels rows of 6 floats: index of the image in the batch, class,
// x, y, w, h normalized to the batch image size (YOLOv5's collate_fn layout).
struct Batch {
  Batch() = default;
  explicit Batch(std::pmr::memory_resource* pixel_memory) : pixels(pixel_memory) {}
  int n = 0, h = 0, w = 0;
  std::pmr::vector<uint8_t> pixels;
  std::vector<float> labels;
  std::vector<std::string> paths;
  std::vector<LetterboxInfo> shapes;  // filled for validation (letterboxed) batches
  size_t num_labels() const { return labels.size() / 6; }
};

}  // namespace kestrel
