// A small synthetic detection dataset (coloured shapes on textured backgrounds), generated on demand so
// that `kestrel train` can be tried, and tested end to end, without downloading anything.
#pragma once
#include <string>
#include <vector>

namespace kestrel {

constexpr int kDemoTrainImages = 400, kDemoValImages = 100;

// Class names in label order: circle, rectangle, triangle, cross.
const std::vector<std::string>& demo_class_names();

// Returns the path of the demo dataset's data.yaml, generating it first when absent. It lives in
// <cache_root>/demo-v1 (cache_root defaults to user_cache_dir()): images/{train,val}/*.jpg (256..384 px a
// side), labels/{train,val}/*.txt in YOLO format, 1-5 objects per image, each 8-35% of the short side.
// The content is a pure function of a fixed seed (byte-identical with the same OpenCV/libjpeg). It is
// generated into a temporary folder and renamed into place, so a concurrent or interrupted run never
// leaves a half-written dataset. Throws std::runtime_error when no folder can be written.
std::string ensure_demo_dataset(const std::string& cache_root = "");

}  // namespace kestrel
