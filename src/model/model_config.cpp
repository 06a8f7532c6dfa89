// Model yaml parsing (yaml-cpp) and parse_model's resolution rules, without LibTorch types.
#include "model/model_config.h"

#include "core/float_text.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "model/builtin_models.h"

namespace kestrel {

// The largest model a yaml may describe: far beyond any YOLO (yolov5x's widest layer has 1280
// channels and 4 repeats), small enough that a mistake is an error rather than an allocation.
constexpr int64_t kMaxClasses = 100000, kMaxChannels = 65536, kMaxRepeats = 1000;

Arg Arg::boolean(bool v) {
  Arg a;
  a.kind = Kind::Bool;
  a.b = v;
  return a;
}
Arg Arg::integer(int64_t v) {
  Arg a;
  a.kind = Kind::Int;
  a.i = v;
  return a;
}
Arg Arg::real(double v) {
  Arg a;
  a.kind = Kind::Float;
  a.f = v;
  return a;
}
Arg Arg::string(std::string v) {
  Arg a;
  a.kind = Kind::String;
  a.s = std::move(v);
  return a;
}
Arg Arg::of(std::vector<Arg> v) {
  Arg a;
  a.kind = Kind::List;
  a.list = std::move(v);
  return a;
}

namespace {

// Python's repr of a float: the shortest decimal that reads back, with ".0" for integral values.
std::string float_repr(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  std::string s = shortest_decimal(v);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

std::string python_repr(const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::None: return "None";
    case Arg::Kind::Bool: return a.b ? "True" : "False";
    case Arg::Kind::Int: return std::to_string(a.i);
    case Arg::Kind::Float: return float_repr(a.f);
    case Arg::Kind::String: return "'" + a.s + "'";
    case Arg::Kind::List: return python_repr(a.list);
  }
  return "";
}

std::string python_repr(const std::vector<Arg>& args) {
  std::string s = "[";
  for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + python_repr(args[i]);
  return s + "]";
}

int64_t make_divisible(double x, int64_t divisor) {
  return static_cast<int64_t>(std::ceil(x / static_cast<double>(divisor))) * divisor;
}

// ------------------------------------------------------------------------------------------
// yaml -> ConfigRow/ModelConfig

namespace {

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw std::runtime_error(where + ": " + what);
}

// A plain yaml scalar typed as PyYAML (YAML 1.1) would type it; quoted scalars stay strings.
Arg scalar_arg(const YAML::Node& node) {
  const std::string& v = node.Scalar();
  if (node.Tag() != "?") return Arg::string(v);  // quoted
  static const std::regex int_re("[-+]?[0-9][0-9_]*");
  static const std::regex float_re("[-+]?([0-9][0-9_]*)?\\.[0-9_]*([eE][-+]?[0-9]+)?");
  if (v.empty() || v == "~" || v == "null" || v == "Null" || v == "NULL") return Arg::none();
  if (v == "true" || v == "True" || v == "TRUE" || v == "yes" || v == "Yes" || v == "on" ||
      v == "On")
    return Arg::boolean(true);
  if (v == "false" || v == "False" || v == "FALSE" || v == "no" || v == "No" || v == "off" ||
      v == "Off")
    return Arg::boolean(false);
  std::string digits = v;
  digits.erase(std::remove(digits.begin(), digits.end(), '_'), digits.end());
  if (std::regex_match(v, int_re)) return Arg::integer(std::stoll(digits));
  if (std::regex_match(v, float_re) && v != "." && v != "+." && v != "-.")
    return Arg::real(std::stod(digits));
  return Arg::string(v);
}

Arg yaml_arg(const YAML::Node& node, const std::string& where) {
  if (node.IsScalar()) return scalar_arg(node);
  if (node.IsNull()) return Arg::none();
  if (node.IsSequence()) {
    std::vector<Arg> items;
    for (const auto& item : node) items.push_back(yaml_arg(item, where));
    return Arg::of(std::move(items));
  }
  fail(where, "unsupported yaml value (a mapping?) among the arguments");
}

int64_t yaml_int(const YAML::Node& node, const std::string& where, const std::string& what) {
  const Arg a = node.IsScalar() ? scalar_arg(node) : Arg::none();
  if (a.kind != Arg::Kind::Int) fail(where, what + " must be an integer");
  return a.i;
}

double yaml_number(const YAML::Node& node, const std::string& where, const std::string& what) {
  const Arg a = node.IsScalar() ? scalar_arg(node) : Arg::none();
  if (!a.is_number()) fail(where, what + " must be a number");
  return a.number();
}

// Ultralytics' keys: `scales` rows [depth, width, max_channels], the `scale` in use (else the one the
// file name gives, else the first row, as Ultralytics does), reg_max; end2end heads are not built.
void read_ultralytics_keys(const YAML::Node& root, ModelConfig& cfg) {
  const std::string& source = cfg.source;
  if (root["end2end"] && scalar_arg(root["end2end"]).kind == Arg::Kind::Bool && scalar_arg(root["end2end"]).b)
    fail(source, "end2end (one-to-one) heads are not supported: YOLOv8, YOLO11 and YOLOv5u yamls are");
  if (root["reg_max"]) cfg.reg_max = yaml_int(root["reg_max"], source, "'reg_max'");
  if (cfg.reg_max < 1 || cfg.reg_max > 64) fail(source, "'reg_max' must be 1..64, not " + std::to_string(cfg.reg_max));
  if (root["scale"]) cfg.scale = root["scale"].IsScalar() ? root["scale"].Scalar() : "?";
  const YAML::Node scales = root["scales"];
  if (!scales) {
    if (!cfg.scale.empty()) fail(source, "'scale: " + cfg.scale + "' needs a 'scales' table");
    return;
  }
  if (!scales.IsMap() || scales.size() == 0) fail(source, "'scales' must map each scale to [depth, width, max_channels]");
  if (cfg.scale.empty()) cfg.scale = scale_in_name(cfg.name);
  if (cfg.scale.empty() || !scales[cfg.scale]) {
    const std::string first = scales.begin()->first.Scalar();
    if (!cfg.scale.empty()) fail(source, "scale '" + cfg.scale + "' is not among its 'scales'");
    std::fprintf(stderr, "WARNING: %s: no model scale in its name; using the first of its scales, '%s'\n", source.c_str(), first.c_str());
    cfg.scale = first;
  }
  const YAML::Node row = scales[cfg.scale];
  const std::string where = source + " scales " + cfg.scale;
  if (!row.IsSequence() || row.size() != 3) fail(where, "a scale must be [depth, width, max_channels]");
  cfg.depth_multiple = yaml_number(row[0], where, "depth");
  cfg.width_multiple = yaml_number(row[1], where, "width");
  cfg.max_channels = yaml_number(row[2], where, "max_channels");
  if (!(cfg.max_channels >= 8 && cfg.max_channels <= kMaxChannels))
    fail(where, "max_channels must be 8.." + std::to_string(kMaxChannels));
  if (!root["scale"]) cfg.text = "scale: " + cfg.scale + "  # the row of 'scales' this model uses\n" + cfg.text;
}

ConfigRow parse_row(const YAML::Node& node, const std::string& where) {
  if (!node.IsSequence() || node.size() != 4)
    fail(where, "a row must be [from, number, module, args]");
  ConfigRow row;
  row.where = where;
  const YAML::Node& from = node[0];
  if (from.IsSequence()) {
    row.from_is_list = true;
    for (const auto& f : from) row.from.push_back(yaml_int(f, where, "'from' entries"));
    if (row.from.empty()) fail(where, "'from' list is empty");
  } else {
    row.from.push_back(yaml_int(from, where, "'from'"));
  }
  row.number = yaml_int(node[1], where, "'number'");
  if (!node[2].IsScalar()) fail(where, "'module' must be a name");
  row.module = node[2].Scalar();
  if (!node[3].IsSequence()) fail(where, "'args' must be a list");
  for (const auto& a : node[3]) row.args.push_back(yaml_arg(a, where));
  return row;
}

void read_rows(const YAML::Node& root, ModelConfig& cfg) {
  int64_t index = 0;
  for (const char* section : {"backbone", "head"}) {
    const YAML::Node rows = root[section];
    if (!rows.IsSequence()) fail(cfg.source, std::string("'") + section + "' must be a list of rows");
    for (size_t r = 0; r < rows.size(); ++r, ++index) {
      const std::string where = cfg.source + " " + section + " row " + std::to_string(r) + " (layer " +
                                std::to_string(index) + ")";
      cfg.rows.push_back(parse_row(rows[r], where));
    }
  }
}

}  // namespace

ModelConfig parse_model_config(const std::string& yaml_text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    fail(source, std::string("not valid yaml: ") + e.what());
  }
  if (!root.IsMap()) fail(source, "a model yaml must be a mapping");
  ModelConfig cfg;
  cfg.source = source;
  cfg.text = yaml_text;
  cfg.name = std::filesystem::path(source).filename().string();
  if (root["yaml_file"] && root["yaml_file"].IsScalar())  // a .pt's yaml names the file it came from
    cfg.name = std::filesystem::path(root["yaml_file"].Scalar()).filename().string();
  // No anchors: an Ultralytics yaml, whose Detect is anchor-free and whose multiples default to 1.
  cfg.ultralytics = !root["anchors"];
  const std::vector<const char*> required = cfg.ultralytics ? std::vector<const char*>{"nc", "backbone", "head"}
                                                            : std::vector<const char*>{"nc", "depth_multiple", "width_multiple", "anchors", "backbone", "head"};
  for (const char* key : required)
    if (!root[key]) fail(source, std::string("missing key '") + key + "'");
  cfg.nc = yaml_int(root["nc"], source, "'nc'");
  if (root["depth_multiple"]) cfg.depth_multiple = yaml_number(root["depth_multiple"], source, "'depth_multiple'");
  if (root["width_multiple"]) cfg.width_multiple = yaml_number(root["width_multiple"], source, "'width_multiple'");
  if (cfg.ultralytics) read_ultralytics_keys(root, cfg);
  if (root["ch"]) cfg.ch = yaml_int(root["ch"], source, "'ch'");
  // Bounds that keep a hostile or mistyped yaml from reaching LibTorch as a negative or absurd size.
  if (cfg.nc < 1 || cfg.nc > kMaxClasses) fail(source, "'nc' must be 1.." + std::to_string(kMaxClasses) + ", not " + std::to_string(cfg.nc));
  for (const auto& [name, v] : {std::pair<const char*, double>{"depth_multiple", cfg.depth_multiple}, {"width_multiple", cfg.width_multiple}})
    if (!(v > 0 && v <= 16)) fail(source, std::string("'") + name + "' must be in (0, 16] (yolov5x: 1.33 and 1.25), not " + std::to_string(v));
  if (cfg.ch && (*cfg.ch < 1 || *cfg.ch > 64)) fail(source, "'ch' (input channels) must be 1..64");
  if (const YAML::Node act = root["activation"]) {
    // Conv.default_act = eval(activation): only the default SiLU is implemented.
    if (!act.IsScalar() || (act.Scalar() != "nn.SiLU()" && act.Scalar() != "nn.SiLU"))
      fail(source, "activation '" + (act.IsScalar() ? act.Scalar() : std::string("?")) +
                       "' is not supported (only nn.SiLU())");
  }
  if (cfg.ultralytics) {
    read_rows(root, cfg);
    return cfg;
  }
  cfg.anchors = yaml_arg(root["anchors"], source + " anchors");
  const bool anchors_ok =
      cfg.anchors.kind == Arg::Kind::Int ||
      (cfg.anchors.kind == Arg::Kind::List && !cfg.anchors.list.empty() &&
       std::all_of(cfg.anchors.list.begin(), cfg.anchors.list.end(), [](const Arg& level) {
         return level.kind == Arg::Kind::List && !level.list.empty() && level.list.size() % 2 == 0 &&
                std::all_of(level.list.begin(), level.list.end(),
                            [](const Arg& v) { return v.is_number(); });
       }));
  if (!anchors_ok)
    fail(source, "'anchors' must be an int count or a list of [w,h, w,h, ...] pixel rows");
  read_rows(root, cfg);
  return cfg;
}

std::vector<std::string> builtin_model_names() {
  std::vector<std::string> names;
  for (const auto& b : builtin_model_yamls()) names.emplace_back(b.name);
  std::sort(names.begin(), names.end());
  return names;
}

std::string scale_in_name(const std::string& name) {
  static const std::regex scaled("yolo(e-)?v?[0-9]+([nslmx])");
  std::smatch m;
  const std::string stem = std::filesystem::path(name).stem().string();
  return std::regex_search(stem, m, scaled) ? m[2].str() : "";
}

ModelConfig load_model_config(const std::string& cfg) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(cfg, ec)) {
    std::ifstream in(cfg, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) throw std::runtime_error(cfg + ": cannot read model yaml");
    return parse_model_config(text.str(), cfg);
  }
  // Built-in: "yolov5n.yaml", "yolov5n", or a path whose file name is one ("models/yolov5n.yaml");
  // a scaled name of an Ultralytics family ("yolov8s.yaml", "yolov5nu") is its yaml at that scale.
  std::string name = fs::path(cfg).filename().string();
  if (fs::path(name).extension() != ".yaml" && fs::path(name).extension() != ".yml") name += ".yaml";
  for (const auto& b : builtin_model_yamls())
    if (name == b.name) return parse_model_config(b.text, b.name);
  const std::string unscaled = std::regex_replace(fs::path(name).stem().string(), std::regex("([0-9]+)([nslmx])(.+)?$"), "$1$3") + ".yaml";
  if (const std::string scale = scale_in_name(name); !scale.empty())
    for (const auto& b : builtin_model_yamls())
      if (unscaled == b.name)
        return parse_model_config("scale: " + scale + "  # the row of 'scales' this model uses\n" + std::string(b.text), name);
  std::string known;
  for (const auto& n : builtin_model_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::runtime_error("model cfg '" + cfg + "' is neither a file nor a built-in model (" +
                           known + ")");
}

// ------------------------------------------------------------------------------------------
// parse_model

namespace {

// eval() of a top-level string argument as parse_model does it; unknown names stay strings.
Arg eval_arg(const Arg& a, const ModelConfig& cfg, int64_t nc) {
  if (a.kind != Arg::Kind::String) return a;
  const std::string& s = a.s;
  if (s == "None") return Arg::none();
  if (s == "True") return Arg::boolean(true);
  if (s == "False") return Arg::boolean(false);
  if (s == "nc") return Arg::integer(nc);
  if (s == "anchors") return cfg.anchors;
  static const std::regex int_re("[-+]?[0-9]+");
  static const std::regex float_re("[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?");
  if (std::regex_match(s, int_re)) return Arg::integer(std::stoll(s));
  if (std::regex_match(s, float_re)) return Arg::real(std::stod(s));
  return a;
}

// The module column of parse_model's table; "" for a module the family does not have.
std::string python_type_of(const std::string& module, bool ultralytics) {
  if (module == "nn.Upsample") return "torch.nn.modules.upsampling.Upsample";
  if (!ultralytics) {
    for (const char* common : {"Conv", "Bottleneck", "C3", "SPP", "SPPF", "Concat"})
      if (module == common) return "models.common." + module;
    return module == "Detect" ? "models.yolo.Detect" : "";
  }
  if (module == "Conv" || module == "Concat") return "ultralytics.nn.modules.conv." + module;
  if (module == "Detect") return "ultralytics.nn.modules.head.Detect";
  for (const char* block : {"Bottleneck", "C3", "C2f", "C3k2", "C2PSA", "SPP", "SPPF"})
    if (module == block) return "ultralytics.nn.modules.block." + module;
  return "";
}

const char* known_modules(bool ultralytics) {
  return ultralytics ? "Conv, Bottleneck, C3, C2f, C3k2, C2PSA, SPP, SPPF, nn.Upsample, Concat, Detect"
                     : "Conv, Bottleneck, C3, SPP, SPPF, nn.Upsample, Concat, Detect";
}

// Reads positional constructor arguments with their defaults, naming the row on a bad value.
class ArgReader {
 public:
  ArgReader(const std::vector<Arg>& args, const LayerSpec& spec, size_t max_args)
      : args_(args), spec_(spec) {
    if (args.size() > max_args)
      fail(spec.where, spec.module + " takes at most " + std::to_string(max_args) +
                           " arguments, got " + python_repr(args));
  }
  bool has(size_t i) const { return i < args_.size(); }
  int64_t integer(size_t i, int64_t dflt, const char* what) const {
    if (!has(i)) return dflt;
    if (args_[i].kind != Arg::Kind::Int) bad(i, what, "an integer");
    return args_[i].i;
  }
  double number(size_t i, double dflt, const char* what) const {
    if (!has(i)) return dflt;
    if (!args_[i].is_number()) bad(i, what, "a number");
    return args_[i].number();
  }
  bool boolean(size_t i, bool dflt, const char* what) const {
    if (!has(i)) return dflt;
    if (args_[i].kind != Arg::Kind::Bool) bad(i, what, "True or False");
    return args_[i].b;
  }
  const Arg& at(size_t i) const { return args_[i]; }
  [[noreturn]] void bad(size_t i, const char* what, const char* expected) const {
    fail(spec_.where, spec_.module + " argument " + std::to_string(i) + " (" + what + ") must be " +
                          expected + ", got " + python_repr(args_[i]));
  }

 private:
  const std::vector<Arg>& args_;
  const LayerSpec& spec_;
};

LayerArgs typed_args(const LayerSpec& spec, bool ultralytics) {
  const std::string& m = spec.module;
  if (m == "Conv") {
    ArgReader r(spec.args, spec, 8);
    ConvArgs a;
    a.c1 = r.integer(0, 0, "c1");
    a.c2 = r.integer(1, 0, "c2");
    a.k = r.integer(2, 1, "k");
    a.s = r.integer(3, 1, "s");
    if (r.has(4) && r.at(4).kind != Arg::Kind::None) a.p = r.integer(4, 0, "p");
    a.g = r.integer(5, 1, "g");
    a.d = r.integer(6, 1, "d");
    a.act = r.boolean(7, true, "act");
    return a;
  }
  if (m == "Bottleneck") {  // Ultralytics' takes k as well, (3, 3) by default
    ArgReader r(spec.args, spec, 5);
    BottleneckArgs a{r.integer(0, 0, "c1"), r.integer(1, 0, "c2"), r.boolean(2, true, "shortcut"),
                     r.integer(3, 1, "g"), r.number(4, 0.5, "e")};
    if (ultralytics) a.k1 = 3;
    return a;
  }
  if (m == "C2f") {
    ArgReader r(spec.args, spec, 6);
    return C2fArgs{r.integer(0, 0, "c1"), r.integer(1, 0, "c2"), r.integer(2, 1, "n"),
                   r.boolean(3, false, "shortcut"), r.integer(4, 1, "g"), r.number(5, 0.5, "e"), C2fArgs::Block::c2f};
  }
  if (m == "C3k2") {
    ArgReader r(spec.args, spec, 8);
    if (r.boolean(5, false, "attn")) fail(spec.where, "C3k2 with attn=True (YOLO26) is not supported");
    return C2fArgs{r.integer(0, 0, "c1"), r.integer(1, 0, "c2"), r.integer(2, 1, "n"), r.boolean(7, true, "shortcut"),
                   r.integer(6, 1, "g"), r.number(4, 0.5, "e"),
                   r.boolean(3, false, "c3k") ? C2fArgs::Block::c3k : C2fArgs::Block::bottleneck};
  }
  if (m == "C2PSA") {
    ArgReader r(spec.args, spec, 4);
    C2PSAArgs a{r.integer(0, 0, "c1"), r.integer(1, 0, "c2"), r.integer(2, 1, "n"), r.number(3, 0.5, "e")};
    if (a.c1 != a.c2) fail(spec.where, "C2PSA needs as many output channels as input channels (" + std::to_string(a.c1) + ")");
    if (static_cast<int64_t>(static_cast<double>(a.c1) * a.e) < 1) r.bad(3, "e", "large enough to leave a channel");
    return a;
  }
  if (m == "C3") {
    ArgReader r(spec.args, spec, 6);
    return C3Args{r.integer(0, 0, "c1"),          r.integer(1, 0, "c2"), r.integer(2, 1, "n"),
                  r.boolean(3, true, "shortcut"), r.integer(4, 1, "g"),  r.number(5, 0.5, "e")};
  }
  if (m == "SPPF") {
    ArgReader r(spec.args, spec, ultralytics ? 5 : 3);
    SPPFArgs a{r.integer(0, 0, "c1"), r.integer(1, 0, "c2"), r.integer(2, 5, "k"), r.integer(3, 3, "n"),
               r.boolean(4, false, "shortcut")};
    a.cv1_act = !ultralytics || spec.args.size() <= 3;  // Ultralytics' legacy rows keep cv1's activation
    if (a.n < 1 || a.n > 16) r.bad(3, "n", "1..16 pools");
    return a;
  }
  if (m == "SPP") {
    ArgReader r(spec.args, spec, 3);
    SPPArgs a{r.integer(0, 0, "c1"), r.integer(1, 0, "c2")};
    if (r.has(2)) {
      if (r.at(2).kind != Arg::Kind::List || r.at(2).list.empty()) r.bad(2, "k", "a list of ints");
      a.k.clear();
      for (const Arg& k : r.at(2).list) {
        if (k.kind != Arg::Kind::Int) r.bad(2, "k", "a list of ints");
        a.k.push_back(k.i);
      }
    }
    return a;
  }
  if (m == "nn.Upsample") {
    ArgReader r(spec.args, spec, 3);
    if (r.has(0) && r.at(0).kind != Arg::Kind::None) r.bad(0, "size", "None (use scale_factor)");
    if (!r.has(1)) fail(spec.where, "nn.Upsample needs a scale_factor");
    UpsampleArgs a{r.number(1, 2.0, "scale_factor")};
    if (r.has(2) && !(r.at(2).kind == Arg::Kind::String && r.at(2).s == "nearest"))
      r.bad(2, "mode", "'nearest'");
    return a;
  }
  if (m == "Concat") {
    ArgReader r(spec.args, spec, 1);
    return ConcatArgs{r.integer(0, 1, "dimension")};
  }
  if (ultralytics) {  // Detect(nc, reg_max, end2end, ch)
    ArgReader r(spec.args, spec, 4);
    DflDetectArgs a{r.integer(0, 80, "nc"), r.integer(1, 16, "reg_max")};
    for (const Arg& c : r.at(3).list) a.ch.push_back(c.i);
    return a;
  }
  // Detect(nc, anchors, ch[, inplace])
  ArgReader r(spec.args, spec, 4);
  DetectArgs a;
  a.nc = r.integer(0, 80, "nc");
  if (!r.has(1) || (r.at(1).kind != Arg::Kind::List && r.at(1).kind != Arg::Kind::Int))
    fail(spec.where, "Detect needs anchors");
  for (const Arg& c : r.at(2).list) a.ch.push_back(c.i);
  if (r.at(1).kind == Arg::Kind::Int) {
    // `anchors: N`: N placeholder anchors per level (0, 1, ..., 2N-1 as in parse_model), which
    // AutoAnchor replaces before training.
    if (r.at(1).i < 1) r.bad(1, "anchors", "a positive anchor count");
    std::vector<double> row;
    for (int64_t v = 0; v < 2 * r.at(1).i; ++v) row.push_back(static_cast<double>(v));
    a.anchors.assign(a.ch.size(), row);
  }
  const std::vector<Arg> no_rows;
  for (const Arg& level : r.at(1).kind == Arg::Kind::List ? r.at(1).list : no_rows) {
    if (level.kind != Arg::Kind::List || level.list.empty() || level.list.size() % 2)
      r.bad(1, "anchors", "rows of (w, h) pairs");
    std::vector<double> row;
    for (const Arg& v : level.list) {
      if (!v.is_number()) r.bad(1, "anchors", "numbers");
      row.push_back(v.number());
    }
    if (!a.anchors.empty() && row.size() != a.anchors.front().size())
      r.bad(1, "anchors", "rows with the same number of anchors");
    a.anchors.push_back(std::move(row));
  }
  if (a.anchors.size() != a.ch.size())
    fail(spec.where, "Detect has " + std::to_string(a.anchors.size()) + " anchor rows but " +
                         std::to_string(a.ch.size()) + " inputs");
  r.boolean(3, true, "inplace");
  return a;
}

// Python's round(): half to even.
int64_t round_half_even(double x) { return static_cast<int64_t>(std::nearbyint(x)); }

// Modules whose repeats go into their own arguments (n inserted after c2) instead of a Sequential.
bool takes_repeats(const std::string& module) {
  return module == "C3" || module == "C2f" || module == "C3k2" || module == "C2PSA";
}

// [c2, ...] -> [c1, c2', ...] for the modules that set their output channels: c2 scaled by the
// width (YOLOv5 leaves a c2 equal to the head's `no` alone; Ultralytics caps c2 at max_channels
// first), repeats inserted, and Ultralytics' C3k2 made of C3k blocks at scales m, l and x.
int64_t channel_args(const ModelConfig& cfg, const ModelSpec& spec, const ConfigRow& row, int64_t c1, int64_t n,
                     std::vector<Arg>& args) {
  if (args.empty() || args[0].kind != Arg::Kind::Int)
    fail(row.where, row.module + " needs its output channels as the first argument");
  int64_t c2 = args[0].i;
  if (cfg.ultralytics) c2 = make_divisible(std::min(static_cast<double>(c2), cfg.max_channels) * cfg.width_multiple, 8);
  else if (c2 != spec.no) c2 = make_divisible(static_cast<double>(c2) * cfg.width_multiple, 8);
  args[0] = Arg::integer(c2);
  args.insert(args.begin(), Arg::integer(c1));
  if (takes_repeats(row.module)) args.insert(args.begin() + 2, Arg::integer(n));
  if (row.module == "C3k2" && (cfg.scale == "m" || cfg.scale == "l" || cfg.scale == "x")) {
    if (args.size() > 3) args[3] = Arg::boolean(true);
    else args.push_back(Arg::boolean(true));
  }
  return c2;
}

// The Detect row's arguments once its inputs are known: YOLOv5's [nc, anchors, ch] (an anchor count
// becomes placeholder rows 0..2k-1, which AutoAnchor replaces), Ultralytics' [nc, reg_max, None, ch].
void detect_args(const ModelConfig& cfg, const std::vector<int64_t>& ch, std::vector<Arg>& args) {
  std::vector<Arg> channels;
  for (int64_t c : ch) channels.push_back(Arg::integer(c));
  if (cfg.ultralytics) {
    args.push_back(Arg::integer(cfg.reg_max));
    args.push_back(Arg::none());
    args.push_back(Arg::of(std::move(channels)));
    return;
  }
  args.push_back(Arg::of(std::move(channels)));
  if (args.size() > 1 && args[1].kind == Arg::Kind::Int) {
    std::vector<Arg> level;
    for (int64_t k = 0; k < args[1].i * 2; ++k) level.push_back(Arg::integer(k));
    args[1] = Arg::of(std::vector<Arg>(ch.size(), Arg::of(level)));
  }
}

void check_row_shape(const ModelConfig& cfg, const ConfigRow& row, size_t row_i) {
  const bool last = row_i + 1 == cfg.rows.size();
  if (row.number < 1) fail(row.where, "'number' must be at least 1");
  if (row.module == "Detect" && !last) fail(row.where, "Detect must be the last row");
  if (row.module != "Detect" && last) fail(row.where, "the last row must be Detect");
  const bool multi_input = row.module == "Concat" || row.module == "Detect";
  if (!multi_input && row.from_is_list) fail(row.where, row.module + " takes one input; 'from' must be a single index");
  if (multi_input && row.number != 1) fail(row.where, row.module + " cannot be repeated");
  if (row.module == "Detect" && row.args.size() != (cfg.ultralytics ? 1u : 2u))
    fail(row.where, cfg.ultralytics ? "Detect args must be [nc]" : "Detect args must be [nc, anchors]");
}

}  // namespace

ModelSpec resolve_model(const ModelConfig& cfg, std::optional<int64_t> nc_override,
                        int64_t ch_default) {
  ModelSpec spec;
  spec.nc = nc_override.value_or(cfg.nc);
  if (spec.nc < 1 || spec.nc > kMaxClasses)
    fail(cfg.source, "the model cannot have " + std::to_string(spec.nc) + " classes (1.." + std::to_string(kMaxClasses) + ")");
  spec.ch = cfg.ch.value_or(ch_default);
  spec.anchor_free = cfg.ultralytics;
  spec.na = cfg.ultralytics ? 1
            : cfg.anchors.kind == Arg::Kind::Int ? cfg.anchors.i
                                                 : static_cast<int64_t>(cfg.anchors.list.front().list.size() / 2);
  spec.no = cfg.ultralytics ? spec.nc + 4 * cfg.reg_max : spec.na * (spec.nc + 5);
  // Ultralytics' Detect is `legacy` (two 3x3 convs in its class branch) unless a C3k2 came before.
  bool legacy_head = true;

  std::vector<int64_t> ch_out;  // output channels of each layer so far
  for (size_t row_i = 0; row_i < cfg.rows.size(); ++row_i) {
    const ConfigRow& row = cfg.rows[row_i];
    const auto i = static_cast<int64_t>(row_i);
    LayerSpec L;
    L.index = i;
    L.from = row.from;
    L.from_is_list = row.from_is_list;
    L.module = row.module;
    L.where = row.where;
    L.python_type = python_type_of(row.module, cfg.ultralytics);
    if (L.python_type.empty()) fail(row.where, "unknown module '" + row.module + "' (known: " + known_modules(cfg.ultralytics) + ")");
    check_row_shape(cfg, row, row_i);

    // Where each input comes from: -1 is the previous layer (the image for layer 0).
    auto channels_of = [&](int64_t src) { return src < 0 ? spec.ch : ch_out[src]; };
    for (int64_t f : row.from) {
      const int64_t src = f == -1 ? i - 1 : (f < 0 ? i + f : f);
      const bool earlier_layer = src >= 0 && src < i;
      const bool image = src == -1 && i == 0;
      if (!earlier_layer && !image)
        fail(row.where, "'from' " + std::to_string(f) + " does not name an earlier layer");
      L.sources.push_back(src);
    }

    std::vector<Arg> args;
    for (const Arg& a : row.args) args.push_back(eval_arg(a, cfg, spec.nc));
    const int64_t n = row.number > 1 ? std::max<int64_t>(round_half_even(row.number * cfg.depth_multiple), 1)
                                     : row.number;
    if (n > kMaxRepeats) fail(row.where, "'number' x depth_multiple is " + std::to_string(n) + " repeats (at most " + std::to_string(kMaxRepeats) + ")");
    L.n = n;
    L.repeats = takes_repeats(row.module) ? 1 : n;
    if (row.module == "Concat") {
      L.c_out = 0;
      for (int64_t src : L.sources) L.c_out += channels_of(src);
    } else if (row.module == "Detect") {
      std::vector<int64_t> ch;
      for (int64_t src : L.sources) ch.push_back(channels_of(src));
      detect_args(cfg, ch, args);
      L.c_out = 0;
    } else if (row.module == "nn.Upsample") {
      L.c_out = channels_of(L.sources[0]);
    } else {
      L.c_out = channel_args(cfg, spec, row, channels_of(L.sources[0]), n, args);
      if (row.module == "C3k2") legacy_head = false;
    }
    if (row.module != "Detect" && (L.c_out < 1 || L.c_out > kMaxChannels))
      fail(row.where, row.module + " would have " + std::to_string(L.c_out) + " output channels (1.." + std::to_string(kMaxChannels) + ")");
    L.args = std::move(args);
    L.typed = typed_args(L, cfg.ultralytics);
    if (auto* head = std::get_if<DflDetectArgs>(&L.typed)) head->legacy = legacy_head;
    for (int64_t f : row.from)
      if (f != -1) spec.save.push_back(((f % i) + i) % i);  // Python's x % i
    ch_out.push_back(L.c_out);
    spec.layers.push_back(std::move(L));
  }
  std::sort(spec.save.begin(), spec.save.end());
  return spec;
}

}  // namespace kestrel
