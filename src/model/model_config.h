// Model yamls of both families: YOLOv5's (depth/width multiples, anchors) and Ultralytics' (YOLOv8,
// YOLO11, YOLOv5u: `scales` of depth, width and max_channels, an anchor-free Detect). Parsing the
// file, and resolving its rows into concrete layers with each family's parse_model rules (multiples,
// channel bookkeeping, repeats, Detect inputs).
#pragma once
#include <cstdint>
#include <limits>
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
  double max_channels = std::numeric_limits<double>::infinity();  // Ultralytics: channels capped before the width
  std::string scale;          // Ultralytics: the row of `scales` in use (n, s, m, l, x), "" for YOLOv5 yamls
  int64_t reg_max = 16;       // Ultralytics: DFL bins per box side
  std::optional<int64_t> ch;  // input channels, when the yaml sets 'ch'
  Arg anchors;                // per level a list of flat pixel (w, h) pairs, or an int count; None: anchor-free
  bool ultralytics = false;   // an Ultralytics yaml: anchor-free Detect, its module set and rules
  std::string family() const { return ultralytics ? "ultralytics" : "yolov5"; }
  std::vector<ConfigRow> rows;  // backbone rows, then head rows
  // A pruned model (kestrel prune): the state-dict tensors whose channels were cut, with their
  // shapes. Empty for the architecture the yaml describes. Not part of the yaml text.
  std::map<std::string, std::vector<int64_t>> pruned_shapes;
};

// Parses yaml text; `source` names it in error messages.
ModelConfig parse_model_config(const std::string& yaml_text, const std::string& source);
// --cfg resolution: an existing file first, else a built-in model ("yolov5n.yaml" or "yolov5n"). A
// scaled name picks a row of an Ultralytics yaml's `scales`, as Ultralytics does: "yolov8s.yaml"
// is yolov8.yaml at scale s, "yolov5nu.yaml" yolov5u.yaml at scale n. The scale is written into
// the config's text (`scale: s`), so checkpoints rebuild the same model.
ModelConfig load_model_config(const std::string& cfg);
// Ultralytics' guess_model_scale: the letter after the version in a file name ("yolo11s" -> "s").
std::string scale_in_name(const std::string& name);
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
  int64_t k1 = 1, k2 = 3;  // kernels of cv1 and cv2 (YOLOv5's; Ultralytics' C2f and C3k use 3, 3)
};
struct C3Args {
  int64_t c1 = 0, c2 = 0, n = 1;
  bool shortcut = true;
  int64_t g = 1;
  double e = 0.5;
  int64_t k = 1;  // cv1 kernel of its bottlenecks: 1 in C3, 3 in C3k (whose cv2 kernel is 3 as well)
};
// C2f(c1, c2, n, shortcut=False, g, e) and C3k2(c1, c2, n, c3k=False, e, attn, g, shortcut=True):
// one split 1x1 conv, n blocks each reading the last output, all outputs concatenated.
struct C2fArgs {
  int64_t c1 = 0, c2 = 0, n = 1;
  bool shortcut = false;
  int64_t g = 1;
  double e = 0.5;
  // What each of the n blocks is: C2f's Bottleneck(c, c, e=1.0); C3k2's Bottleneck(c, c) (e 0.5),
  // or with c3k a C3k(c, c, n=2) (a C3 whose bottlenecks have two 3x3 convs). Kernels are 3x3.
  enum class Block { c2f, bottleneck, c3k } block = Block::c2f;
};
// C2PSA(c1, c2, n, e): half the channels through n attention blocks (PSABlock).
struct C2PSAArgs {
  int64_t c1 = 0, c2 = 0, n = 1;
  double e = 0.5;
};
struct SPPArgs {
  int64_t c1 = 0, c2 = 0;
  std::vector<int64_t> k{5, 9, 13};
};
struct SPPFArgs {
  int64_t c1 = 0, c2 = 0, k = 5;
  int64_t n = 3;         // pools in sequence (Ultralytics' n)
  bool shortcut = false;  // Ultralytics: adds the input when c1 == c2
  bool cv1_act = true;    // Ultralytics leaves cv1 unactivated unless the row is a legacy one (<= 3 args)
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
// Ultralytics' anchor-free Detect(nc, reg_max, end2end, ch): per level a box branch of 4 x reg_max
// DFL bins and a class branch; `legacy` (YOLOv8, YOLOv5u) has two 3x3 convs in the class branch,
// YOLO11 depthwise-separable ones.
struct DflDetectArgs {
  int64_t nc = 80, reg_max = 16;
  std::vector<int64_t> ch;
  bool legacy = true;
};
using LayerArgs = std::variant<ConvArgs, BottleneckArgs, C3Args, C2fArgs, C2PSAArgs, SPPArgs, SPPFArgs,
                               UpsampleArgs, ConcatArgs, DetectArgs, DflDetectArgs>;

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
  int64_t nc = 80, na = 3, no = 85, ch = 3;  // anchor-free: na 1, no = nc + 4 x reg_max
  bool anchor_free = false;
};

// parse_model: applies the multiples and channel rules. nc_override replaces the yaml's nc (as
// DetectionModel(cfg, nc=...) does); ch_default is used when the yaml has no 'ch'.
ModelSpec resolve_model(const ModelConfig& cfg, std::optional<int64_t> nc_override = std::nullopt,
                        int64_t ch_default = 3);

// make_divisible(x, divisor) = ceil(x / divisor) * divisor.
int64_t make_divisible(double x, int64_t divisor);

}  // namespace kestrel
