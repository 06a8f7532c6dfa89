// Model yaml (YOLOv5 format): parsing the file, and resolving its rows into concrete layers with
// parse_model's scaling rules (depth/width multiples, channel bookkeeping, Detect inputs).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace kestrel {

// One argument of a yaml row: what Python's parse_model sees after eval() of each string.
struct Arg {
  enum class Kind { None, Bool, Int, Float, String, List };
  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double f = 0.0;
  std::string s;
  std::vector<Arg> list;

  static Arg none() { return {}; }
  static Arg boolean(bool v);
  static Arg integer(int64_t v);
  static Arg real(double v);
  static Arg string(std::string v);
  static Arg of(std::vector<Arg> v);
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float; }
  double number() const { return kind == Kind::Int ? static_cast<double>(i) : f; }
};

// Python's str() of an argument list, as parse_model logs it: [None, 2, 'nearest'].
std::string python_repr(const Arg& a);
std::string python_repr(const std::vector<Arg>& args);

// One [from, number, module, args] row as written in the yaml.
struct ConfigRow {
  std::vector<int64_t> from;  // -1 = previous layer; negatives count back from the row
  bool from_is_list = false;  // written as [a, b] (also a one-element list)
  int64_t number = 1;
  std::string module;
  std::vector<Arg> args;  // names (nc, anchors, None, ...) not yet substituted
  std::string where;      // "yolov5n.yaml head row 3 (layer 13)", for error messages
};

// A parsed model yaml.
struct ModelConfig {
  std::string source;  // file path or built-in name it came from
  std::string name;    // file name, e.g. "yolov5n.yaml"
  std::string text;    // the yaml text itself (saved in checkpoints so they rebuild their model)
  int64_t nc = 80;
  double depth_multiple = 1.0;
  double width_multiple = 1.0;
  std::optional<int64_t> ch;  // input channels, when the yaml sets 'ch'
  Arg anchors;                // per level a list of flat pixel (w, h) pairs, or an int count
  std::vector<ConfigRow> rows;  // backbone rows, then head rows
  // A pruned model (kestrel prune): the state-dict tensors whose channels were cut, with their
  // shapes. Empty for the architecture the yaml describes. Not part of the yaml text.
  std::map<std::string, std::vector<int64_t>> pruned_shapes;
};

// Parses yaml text; `source` names it in error messages.
ModelConfig parse_model_config(const std::string& yaml_text, const std::string& source);
// --cfg resolution: an existing file first, else a built-in model ("yolov5n.yaml" or "yolov5n").
ModelConfig load_model_config(const std::string& cfg);
// Names of the built-in models (cfg/models/*.yaml embedded at build time), sorted.
std::vector<std::string> builtin_model_names();

// ---- constructor arguments of each layer type (defaults as in YOLOv5's models/common.py)
struct ConvArgs {
  int64_t c1 = 0, c2 = 0, k = 1, s = 1;
  std::optional<int64_t> p;  // none: autopad to k/2 (dilation-aware)
  int64_t g = 1, d = 1;
  bool act = true;  // SiLU, else identity
};
struct BottleneckArgs {
  int64_t c1 = 0, c2 = 0;
  bool shortcut = true;
  int64_t g = 1;
  double e = 0.5;
};
struct C3Args {
  int64_t c1 = 0, c2 = 0, n = 1;
  bool shortcut = true;
  int64_t g = 1;
  double e = 0.5;
};
struct SPPArgs {
  int64_t c1 = 0, c2 = 0;
  std::vector<int64_t> k{5, 9, 13};
};
struct SPPFArgs {
  int64_t c1 = 0, c2 = 0, k = 5;
};
struct UpsampleArgs {
  double scale = 2.0;  // nearest neighbour
};
struct ConcatArgs {
  int64_t dim = 1;
};
struct DetectArgs {
  int64_t nc = 80;
  std::vector<std::vector<double>> anchors;  // per level, flat pixel (w, h) pairs
  std::vector<int64_t> ch;                   // input channels per level
};
using LayerArgs = std::variant<ConvArgs, BottleneckArgs, C3Args, SPPArgs, SPPFArgs, UpsampleArgs,
                               ConcatArgs, DetectArgs>;

// One layer after parse_model's rules.
struct LayerSpec {
  int64_t index = 0;
  std::vector<int64_t> from;  // as written (relative -1 kept)
  bool from_is_list = false;
  std::vector<int64_t> sources;  // absolute layer indices of `from` (-1 -> index-1)
  int64_t n = 1;                 // repeats after depth scaling (the table's n)
  int64_t repeats = 1;           // modules built in sequence (1 for C3: n moves into its args)
  std::string module;            // yaml name: Conv, C3, nn.Upsample, ...
  std::string python_type;       // models.common.Conv, ... (the table's module column)
  std::vector<Arg> args;         // as passed to the constructor (parse_model's args)
  LayerArgs typed;               // the same, typed
  int64_t c_out = 0;             // output channels
  std::string where;
};

// The resolved network: layers, saved outputs, and head shape.
struct ModelSpec {
  std::vector<LayerSpec> layers;
  std::vector<int64_t> save;  // sorted layer indices whose outputs later layers read
  int64_t nc = 80, na = 3, no = 85, ch = 3;
};

// parse_model: applies the multiples and channel rules. nc_override replaces the yaml's nc (as
// DetectionModel(cfg, nc=...) does); ch_default is used when the yaml has no 'ch'.
ModelSpec resolve_model(const ModelConfig& cfg, std::optional<int64_t> nc_override = std::nullopt,
                        int64_t ch_default = 3);

// make_divisible(x, divisor) = ceil(x / divisor) * divisor.
int64_t make_divisible(double x, int64_t divisor);

}  // namespace kestrel
