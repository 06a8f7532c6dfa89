// detect --source resolution (see detect_sources.h).
#include "val/detect_sources.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <stdexcept>

#include "data/index/label_index.h"

namespace fs = std::filesystem;

namespace kestrel {

bool has_video_extension(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* v : {".asf", ".avi", ".gif", ".m4v", ".mkv", ".mov", ".mp4", ".mpeg", ".mpg", ".ts", ".wmv", ".webm"})
    if (ext == v) return true;
  return false;
}

std::vector<DetectSource> list_detect_sources(const std::string& source) {
  std::error_code ec;
  if (!fs::exists(source, ec)) throw std::runtime_error("--source " + source + " does not exist");
  std::vector<DetectSource> out;
  if (fs::is_regular_file(source, ec) && has_video_extension(source)) return {{source, true}};
  for (const std::string& image : list_image_files({source})) out.push_back({image, false});
  if (!fs::is_directory(source, ec)) return out;
  std::vector<std::string> videos;
  for (const fs::directory_entry& e : fs::directory_iterator(source, ec))
    if (e.is_regular_file(ec) && has_video_extension(e.path().string())) videos.push_back(e.path().string());
  std::sort(videos.begin(), videos.end());
  for (const std::string& v : videos) out.push_back({v, true});
  return out;
}

}  // namespace kestrel
