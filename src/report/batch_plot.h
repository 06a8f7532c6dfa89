// train_batchN.jpg and val_batchN_labels/pred.jpg, YOLOv5's plot_images: up to 16 images of a batch
// in a square grid (at most 1920 px a side), each with its file name and its boxes in class colours,
// labelled by class name (and confidence for predictions, of which those above 0.25 are drawn).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/types.h"

namespace kestrel {

struct PlotBox {
  int image = 0;     // index in the batch
  int cls = 0;
  float conf = -1;   // < 0: a label (no confidence shown)
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // batch-image pixels
};

struct BatchPicture {
  int n = 0, h = 0, w = 0;
  std::vector<uint8_t> pixels;  // n*3*h*w, RGB NCHW (the loader's Batch layout)
  std::vector<std::string> paths;
  std::vector<PlotBox> boxes;
};

// A loader batch with its labels as boxes (YOLOv5's collate layout: normalised x, y, w, h).
BatchPicture picture_of(const Batch& batch);

void write_batch_plot(const BatchPicture& batch, const std::vector<std::string>& names, const std::string& path);

}  // namespace kestrel
