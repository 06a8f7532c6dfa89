// data.yaml parsing (YOLOv5 check_dataset's path rules) with errors that name file and line.
#include "data/index/dataset_config.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>

#include "data/pack/pack_reader.h"

namespace fs = std::filesystem;

namespace kestrel {
namespace {

[[noreturn]] void fail(const std::string& file, const YAML::Mark& mark, const std::string& what) {
  std::string where = file;
  if (!mark.is_null()) where += ":" + std::to_string(mark.line + 1);
  throw DatasetConfigError(where + ": " + what);
}

std::string scalar(const std::string& file, const YAML::Node& node, const char* key) {
  if (!node.IsScalar()) fail(file, node.Mark(), std::string("'") + key + "' must be a string");
  return node.Scalar();
}

// Lexically normal, without a trailing separator ("a/./" -> "a").
fs::path normal(const fs::path& p) {
  fs::path n = p.lexically_normal();
  if (!n.has_filename() && n.has_relative_path()) n = n.parent_path();
  return n;
}

fs::path resolve_root(const fs::path& yaml_dir, const std::string& path_value) {
  if (path_value.empty()) return normal(yaml_dir);
  const fs::path p(path_value);
  if (p.is_absolute()) return normal(p);
  const fs::path beside_yaml = yaml_dir / p;
  if (fs::exists(beside_yaml)) return normal(beside_yaml);
  return normal(fs::absolute(p));
}

std::string resolve_source(const fs::path& root, const std::string& s) {
  const std::string file = is_pack_source(s) ? s.substr(0, s.rfind('#')) : s;  // "x.kpack#train" is file x.kpack
  fs::path x = root / s;
  if (!fs::exists(root / file) && s.rfind("../", 0) == 0) x = root / s.substr(3);
  return normal(x).string();
}

std::vector<std::string> split_sources(const std::string& file, const fs::path& root, const YAML::Node& node,
                                       const char* key) {
  std::vector<std::string> out;
  if (!node || node.IsNull()) return out;
  if (node.IsSequence()) {
    for (const auto& item : node) out.push_back(resolve_source(root, scalar(file, item, key)));
  } else {
    out.push_back(resolve_source(root, scalar(file, node, key)));
  }
  return out;
}

std::vector<std::string> parse_names(const std::string& file, const YAML::Node& node) {
  std::vector<std::string> names;
  if (node.IsSequence()) {
    for (const auto& item : node) names.push_back(scalar(file, item, "names"));
    return names;
  }
  if (!node.IsMap()) fail(file, node.Mark(), "'names' must be a list or a map {index: name}");
  std::map<long, std::string> by_index;
  for (const auto& kv : node) {
    long index = -1;
    try {
      index = kv.first.as<long>();
    } catch (const YAML::Exception&) {
      fail(file, kv.first.Mark(), "'names' keys must be integers, got '" + kv.first.Scalar() + "'");
    }
    by_index[index] = scalar(file, kv.second, "names");
  }
  for (const auto& [index, name] : by_index) {
    if (index != static_cast<long>(names.size()))
      fail(file, node.Mark(), "'names' keys must be 0..n-1 without gaps (missing " + std::to_string(names.size()) + ")");
    names.push_back(name);
  }
  return names;
}

}  // namespace

DatasetConfig load_dataset_config(const std::string& yaml_path) {
  YAML::Node doc;
  try {
    doc = YAML::LoadFile(yaml_path);
  } catch (const YAML::BadFile&) {
    throw DatasetConfigError("cannot open dataset config " + yaml_path);
  } catch (const YAML::Exception& e) {
    fail(yaml_path, e.mark, e.msg);
  }
  if (!doc.IsMap()) fail(yaml_path, doc.Mark(), "a dataset config must be a YAML mapping");

  DatasetConfig cfg;
  cfg.yaml_path = yaml_path;
  const fs::path yaml_dir = fs::absolute(yaml_path).parent_path();
  const YAML::Node path_node = doc["path"];
  const std::string path_value = path_node && !path_node.IsNull() ? scalar(yaml_path, path_node, "path") : "";
  const fs::path root = resolve_root(yaml_dir, path_value);
  cfg.root = root.string();

  for (const char* key : {"train", "val"})
    if (!doc[key] || doc[key].IsNull()) fail(yaml_path, doc.Mark(), std::string("'") + key + ":' field missing");
  cfg.train = split_sources(yaml_path, root, doc["train"], "train");
  cfg.val = split_sources(yaml_path, root, doc["val"], "val");
  cfg.test = split_sources(yaml_path, root, doc["test"], "test");

  const YAML::Node names_node = doc["names"], nc_node = doc["nc"];
  const bool has_nc = nc_node && !nc_node.IsNull();
  int nc = -1;
  if (has_nc) {
    try {
      nc = nc_node.as<int>();
    } catch (const YAML::Exception&) {
      fail(yaml_path, nc_node.Mark(), "'nc' must be an integer");
    }
    if (nc <= 0) fail(yaml_path, nc_node.Mark(), "'nc' must be positive");
  }
  if (names_node && !names_node.IsNull()) {
    cfg.names = parse_names(yaml_path, names_node);
    if (cfg.names.empty()) fail(yaml_path, names_node.Mark(), "'names' is empty");
    if (has_nc && nc != static_cast<int>(cfg.names.size()))
      fail(yaml_path, nc_node.Mark(),
           "nc: " + std::to_string(nc) + " does not match the " + std::to_string(cfg.names.size()) + " names");
  } else if (has_nc) {
    for (int i = 0; i < nc; ++i) cfg.names.push_back("class" + std::to_string(i));
  } else {
    fail(yaml_path, doc.Mark(), "'names:' field missing (and no 'nc:')");
  }
  cfg.nc = static_cast<int>(cfg.names.size());
  return cfg;
}

}  // namespace kestrel
