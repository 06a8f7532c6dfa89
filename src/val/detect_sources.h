// What `kestrel detect --source` can name, as detect.py's LoadImages: an image, a video file, a
// folder (its images, searched recursively, and the videos at its top level), or a *.txt list of
// images. Videos are the extensions detect.py reads (VID_FORMATS), decoded with OpenCV's videoio.
#pragma once
#include <string>
#include <vector>

namespace kestrel {

struct DetectSource {
  std::string path;
  bool video = false;
};

bool has_video_extension(const std::string& path);
// Images first (sorted), then videos (sorted). Throws naming the source when it does not exist.
std::vector<DetectSource> list_detect_sources(const std::string& source);

}  // namespace kestrel
