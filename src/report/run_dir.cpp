// YOLOv5 increment_path and the train run folder (see run_dir.h).
#include "report/run_dir.h"

#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace fs = std::filesystem;

namespace kestrel {

std::string increment_path(const std::string& path, bool exist_ok, const std::string& sep, bool mkdir) {
  fs::path p(path);
  if (fs::exists(p) && !exist_ok) {
    fs::path base = p;
    std::string suffix;
    if (fs::is_regular_file(p)) {
      suffix = p.extension().string();
      base = p.parent_path() / p.stem();
    }
    bool found = false;
    for (int n = 2; n < 9999 && !found; ++n) {
      const fs::path candidate = base.string() + sep + std::to_string(n) + suffix;
      if (!fs::exists(candidate)) {
        p = candidate;
        found = true;
      }
    }
    if (!found) throw std::runtime_error("increment_path: no free name for " + path + " up to 9998");
  }
  if (mkdir) {
    std::error_code ec;
    fs::create_directories(p, ec);
    if (ec) throw std::runtime_error("cannot create " + p.string() + ": " + ec.message());
  }
  return p.string();
}

RunDir make_run_dir(const std::string& project, const std::string& name, bool exist_ok) {
  RunDir run;
  run.save_dir = increment_path((fs::path(project) / name).string(), exist_ok);
  run.weights_dir = (fs::path(run.save_dir) / "weights").string();
  std::error_code ec;
  fs::create_directories(run.weights_dir, ec);
  if (ec) throw std::runtime_error("cannot create " + run.weights_dir + ": " + ec.message());
  return run;
}

std::string path_component(const std::string& name) {
  if (name.empty() || name == "." || name == "..") return "_";
  std::string out = name;
  for (char& c : out)
    if (c == '/' || c == '\\' || static_cast<unsigned char>(c) < 0x20) c = '_';
  return out;
}

}  // namespace kestrel
