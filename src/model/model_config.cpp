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
  if (root["yaml_file"] && root["yaml_file"].IsScalar())  // a YOLOv5 .pt's yaml names the file it came from
    cfg.name = std::filesystem::path(root["yaml_file"].Scalar()).filename().string();
  for (const char* key : {"nc", "depth_multiple", "width_multiple", "anchors", "backbone", "head"})
    if (!root[key]) fail(source, std::string("missing key '") + key + "'");
  cfg.nc = yaml_int(root["nc"], source, "'nc'");
  cfg.depth_multiple = yaml_number(root["depth_multiple"], source, "'depth_multiple'");
  cfg.width_multiple = yaml_number(root["width_multiple"], source, "'width_multiple'");
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

  int64_t index = 0;
  for (const char* section : {"backbone", "head"}) {
    const YAML::Node rows = root[section];
    if (!rows.IsSequence()) fail(source, std::string("'") + section + "' must be a list of rows");
    for (size_t r = 0; r < rows.size(); ++r, ++index) {
      const std::string where = source + " " + section + " row " + std::to_string(r) + " (layer " +
                                std::to_string(index) + ")";
      cfg.rows.push_back(parse_row(rows[r], where));
    }
  }
  return cfg;
}

std::vector<std::string> builtin_model_names() {
  std::vector<std::string> names;
  for (const auto& b : builtin_model_yamls()) names.emplace_back(b.name);
  std::sort(names.begin(), names.end());
  return names;
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
  // Built-in: "yolov5n.yaml", "yolov5n", or a path whose file name is one ("models/yolov5n.yaml").
  std::string name = fs::path(cfg).filename().string();
  if (fs::path(name).extension() != ".yaml" && fs::path(name).extension() != ".yml") name += ".yaml";
  for (const auto& b : builtin_model_yamls())
    if (name == b.name) return parse_model_config(b.text, b.name);
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

const char* python_type_of(const std::string& module) {
  if (module == "Conv") return "models.common.Conv";
  if (module == "Bottleneck") return "models.common.Bottleneck";
  if (module == "C3") return "models.common.C3";
  if (module == "SPP") return "models.common.SPP";
  if (module == "SPPF") return "models.common.SPPF";
  if (module == "Concat") return "models.common.Concat";
  if (module == "Detect") return "models.yolo.Detect";
  if (module == "nn.Upsample") return "torch.nn.modules.upsampling.Upsample";
  return nullptr;
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

LayerArgs typed_args(const LayerSpec& spec) {
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
  if (m == "Bottleneck") {
    ArgReader r(spec.args, spec, 5);
    return BottleneckArgs{r.integer(0, 0, "c1"), r.integer(1, 0, "c2"),
                          r.boolean(2, true, "shortcut"), r.integer(3, 1, "g"),
                          r.number(4, 0.5, "e")};
  }
  if (m == "C3") {
    ArgReader r(spec.args, spec, 6);
    return C3Args{r.integer(0, 0, "c1"),          r.integer(1, 0, "c2"), r.integer(2, 1, "n"),
                  r.boolean(3, true, "shortcut"), r.integer(4, 1, "g"),  r.number(5, 0.5, "e")};
  }
  if (m == "SPPF") {
    ArgReader r(spec.args, spec, 3);
    return SPPFArgs{r.integer(0, 0, "c1"), r.integer(1, 0, "c2"), r.integer(2, 5, "k")};
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

}  // namespace

ModelSpec resolve_model(const ModelConfig& cfg, std::optional<int64_t> nc_override,
                        int64_t ch_default) {
  ModelSpec spec;
  spec.nc = nc_override.value_or(cfg.nc);
  if (spec.nc < 1 || spec.nc > kMaxClasses)
    fail(cfg.source, "the model cannot have " + std::to_string(spec.nc) + " classes (1.." + std::to_string(kMaxClasses) + ")");
  spec.ch = cfg.ch.value_or(ch_default);
  spec.na = cfg.anchors.kind == Arg::Kind::Int
                ? cfg.anchors.i
                : static_cast<int64_t>(cfg.anchors.list.front().list.size() / 2);
  spec.no = spec.na * (spec.nc + 5);
  const double gd = cfg.depth_multiple, gw = cfg.width_multiple;

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
    const char* type = python_type_of(row.module);
    if (!type)
      fail(row.where, "unknown module '" + row.module +
                          "' (known: Conv, Bottleneck, C3, SPP, SPPF, nn.Upsample, Concat, Detect)");
    L.python_type = type;
    if (row.number < 1) fail(row.where, "'number' must be at least 1");
    if (row.module == "Detect" && row_i + 1 != cfg.rows.size())
      fail(row.where, "Detect must be the last row");
    if (row.module != "Detect" && row_i + 1 == cfg.rows.size())
      fail(row.where, "the last row must be Detect");

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
    const bool multi_input = row.module == "Concat" || row.module == "Detect";
    if (!multi_input && row.from_is_list)
      fail(row.where, row.module + " takes one input; 'from' must be a single index");
    if (multi_input && row.number != 1) fail(row.where, row.module + " cannot be repeated");
    if (row.module == "Detect" && row.args.size() != 2)
      fail(row.where, "Detect args must be [nc, anchors]");

    std::vector<Arg> args;
    for (const Arg& a : row.args) args.push_back(eval_arg(a, cfg, spec.nc));
    const int64_t n = row.number > 1 ? std::max<int64_t>(round_half_even(row.number * gd), 1)
                                     : row.number;
    if (n > kMaxRepeats) fail(row.where, "'number' x depth_multiple is " + std::to_string(n) + " repeats (at most " + std::to_string(kMaxRepeats) + ")");
    L.n = n;
    L.repeats = n;
    if (row.module == "Concat") {
      L.c_out = 0;
      for (int64_t src : L.sources) L.c_out += channels_of(src);
    } else if (row.module == "Detect") {
      std::vector<Arg> ch;
      for (int64_t src : L.sources) ch.push_back(Arg::integer(channels_of(src)));
      args.push_back(Arg::of(std::move(ch)));
      if (args.size() > 1 && args[1].kind == Arg::Kind::Int) {
        // an anchor count: placeholder anchors 0..2k-1 per level, to be replaced by autoanchor
        std::vector<Arg> level;
        for (int64_t k = 0; k < args[1].i * 2; ++k) level.push_back(Arg::integer(k));
        args[1] = Arg::of(std::vector<Arg>(L.sources.size(), Arg::of(level)));
      }
      L.c_out = 0;
    } else if (row.module == "nn.Upsample") {
      L.c_out = channels_of(L.sources[0]);
    } else {  // Conv, Bottleneck, C3, SPP, SPPF: [c2, ...] -> [c1, c2, ...]
      if (args.empty() || args[0].kind != Arg::Kind::Int)
        fail(row.where, row.module + " needs its output channels as the first argument");
      int64_t c2 = args[0].i;
      if (c2 != spec.no) c2 = make_divisible(static_cast<double>(c2) * gw, 8);
      args[0] = Arg::integer(c2);
      args.insert(args.begin(), Arg::integer(channels_of(L.sources[0])));
      if (row.module == "C3") {
        args.insert(args.begin() + 2, Arg::integer(n));
        L.repeats = 1;
      }
      L.c_out = c2;
    }
    if (row.module != "Detect" && (L.c_out < 1 || L.c_out > kMaxChannels))
      fail(row.where, row.module + " would have " + std::to_string(L.c_out) + " output channels (1.." + std::to_string(kMaxChannels) + ")");
    L.args = std::move(args);
    L.typed = typed_args(L);
    for (int64_t f : row.from)
      if (f != -1) spec.save.push_back(((f % i) + i) % i);  // Python's x % i
    ch_out.push_back(L.c_out);
    spec.layers.push_back(std::move(L));
  }
  std::sort(spec.save.begin(), spec.save.end());
  return spec;
}

}  // namespace kestrel
