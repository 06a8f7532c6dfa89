// Shared test helpers: reference-vector loading, ../shared lookup, temp dirs, a micro model, free ports.
#include "test_support.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

namespace fs = std::filesystem;

namespace kestrel::test {

const nlohmann::json& reference(const std::string& name) {
  static std::map<std::string, nlohmann::json> cache;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  const std::string path = std::string(KESTREL_TESTDATA_DIR) + "/reference/" + name;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("missing reference vector file " + path);
  return cache[name] = nlohmann::json::parse(in);
}

std::string shared_path(const std::string& rel) {
  const char* env = std::getenv("KESTREL_SHARED_DIR");
  const fs::path p = fs::path(env ? env : KESTREL_SHARED_DIR) / rel;
  return fs::exists(p) ? p.string() : std::string();
}

std::vector<double> json_doubles(const nlohmann::json& t) {
  const auto& d = t.is_object() ? t.at("data") : t;
  std::vector<double> out;
  out.reserve(d.size());
  for (const auto& v : d) out.push_back(v.get<double>());
  return out;
}

std::vector<float> json_floats(const nlohmann::json& t) {
  std::vector<float> out;
  for (double v : json_doubles(t)) out.push_back(static_cast<float>(v));
  return out;
}

std::vector<int64_t> json_shape(const nlohmann::json& t) { return t.at("shape").get<std::vector<int64_t>>(); }

std::string temp_dir(const std::string& tag) {
  static std::vector<fs::path> made;
  static bool registered = false;
  if (!registered) {
    registered = true;
    std::atexit([] {
      std::error_code ec;
      for (auto& p : made) fs::remove_all(p, ec);
    });
  }
  std::string tmpl = (fs::temp_directory_path() / ("kestrel_" + tag + "_XXXXXX")).string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  made.push_back(tmpl);
  return tmpl;
}

std::string micro_model_yaml(int nc, int width) {
  const std::string conv = "Conv, [" + std::to_string(width) + ", 3, 2]]";
  std::string yaml = "nc: " + std::to_string(nc) +
                     "\ndepth_multiple: 1.0\nwidth_multiple: 1.0\nanchors:\n"
                     "  - [10,13, 16,30, 33,23]\n  - [30,61, 62,45, 59,119]\n  - [116,90, 156,198, 373,326]\n"
                     "backbone:\n  [";
  for (int i = 0; i < 5; ++i) yaml += std::string(i ? "   " : "") + "[-1, 1, " + conv + ",\n";
  return yaml + "  ]\nhead:\n  [[[2, 3, 4], 1, Detect, [nc, anchors]],\n  ]\n";
}

int free_tcp_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);  // port 0: the kernel picks a free one
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

}  // namespace kestrel::test
