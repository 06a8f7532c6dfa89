// Model yaml parsing and parse_model resolution against the five reference layer tables.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include "model/model_config.h"
#include "test_support.h"

namespace kestrel {
namespace {

const char* const kModels[] = {"n", "s", "m", "l", "x"};

nlohmann::json to_json(const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::None: return nullptr;
    case Arg::Kind::Bool: return a.b;
    case Arg::Kind::Int: return a.i;
    case Arg::Kind::Float: return a.f;
    case Arg::Kind::String: return a.s;
    case Arg::Kind::List: {
      nlohmann::json out = nlohmann::json::array();
      for (const Arg& x : a.list) out.push_back(to_json(x));
      return out;
    }
  }
  return nullptr;
}

nlohmann::json to_json(const std::vector<Arg>& args) { return to_json(Arg::of(args)); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

const std::string kTiny = R"(
nc: 4
depth_multiple: 0.5
width_multiple: 0.5
anchors:
  - [10,13, 16,30]
  - [30,61, 62,45]
backbone:
  [[-1, 1, Conv, [32, 3, 2]],
   [-1, 3, Conv, [64, 3, 2]],
   [-1, 4, C3, [64]],
  ]
head:
  [[-1, 1, SPP, [64, [3, 5]]],
   [[-1, 1], 1, Concat, [1]],
   [[1, 4], 1, Detect, [nc, anchors]],
  ]
)";

TEST(ModelConfig, ReferenceTablesForAllFiveModels) {
  for (const char* v : kModels) {
    SCOPED_TRACE(std::string("yolov5") + v);
    const auto& ref = test::reference(std::string("model_yolov5") + v + ".json");
    const ModelConfig cfg = load_model_config(std::string("yolov5") + v + ".yaml");
    EXPECT_EQ(cfg.name, std::string("yolov5") + v + ".yaml");
    EXPECT_DOUBLE_EQ(cfg.depth_multiple, ref["depth_multiple"].get<double>());
    EXPECT_DOUBLE_EQ(cfg.width_multiple, ref["width_multiple"].get<double>());
    const ModelSpec spec = resolve_model(cfg);
    EXPECT_EQ(spec.nc, 80);
    EXPECT_EQ(spec.na, 3);
    EXPECT_EQ(spec.no, 255);
    ASSERT_EQ(spec.layers.size(), ref["layers"].size());
    for (size_t i = 0; i < spec.layers.size(); ++i) {
      const LayerSpec& L = spec.layers[i];
      const auto& r = ref["layers"][i];
      SCOPED_TRACE("layer " + std::to_string(i));
      EXPECT_EQ(L.index, r["index"].get<int64_t>());
      const nlohmann::json from = L.from_is_list ? nlohmann::json(L.from) : nlohmann::json(L.from[0]);
      EXPECT_EQ(from, r["from"]);
      EXPECT_EQ(L.n, r["n"].get<int64_t>());
      EXPECT_EQ(L.python_type, r["module"].get<std::string>());
      EXPECT_EQ(to_json(L.args), r["args"]) << python_repr(L.args);
    }
    EXPECT_EQ(nlohmann::json(spec.save), ref["save"]);
  }
}

TEST(ModelConfig, TypedArgumentsAndChannels) {
  const ModelSpec spec = resolve_model(load_model_config("yolov5s"));
  const auto& stem = std::get<ConvArgs>(spec.layers[0].typed);
  EXPECT_EQ(stem.c1, 3);
  EXPECT_EQ(stem.c2, 32);
  EXPECT_EQ(stem.k, 6);
  EXPECT_EQ(stem.s, 2);
  ASSERT_TRUE(stem.p.has_value());
  EXPECT_EQ(*stem.p, 2);
  const auto& c3 = std::get<C3Args>(spec.layers[13].typed);
  EXPECT_EQ(c3.c1, 512);  // Concat of 256 + 256
  EXPECT_EQ(c3.n, 1);
  EXPECT_FALSE(c3.shortcut);
  EXPECT_EQ(spec.layers[12].c_out, 512);
  EXPECT_EQ(spec.layers[12].sources, (std::vector<int64_t>{11, 6}));
  const auto& up = std::get<UpsampleArgs>(spec.layers[11].typed);
  EXPECT_EQ(up.scale, 2.0);
  const auto& det = std::get<DetectArgs>(spec.layers[24].typed);
  EXPECT_EQ(det.ch, (std::vector<int64_t>{128, 256, 512}));
  EXPECT_EQ(det.anchors[2], (std::vector<double>{116, 90, 156, 198, 373, 326}));
  EXPECT_EQ(std::get<SPPFArgs>(spec.layers[9].typed).k, 5);
}

TEST(ModelConfig, NcOverrideReachesDetectOnly) {
  const ModelConfig cfg = load_model_config("yolov5n.yaml");
  const ModelSpec spec = resolve_model(cfg, 3);
  EXPECT_EQ(spec.nc, 3);
  EXPECT_EQ(spec.no, 24);
  EXPECT_EQ(std::get<DetectArgs>(spec.layers.back().typed).nc, 3);
  EXPECT_EQ(spec.layers[23].c_out, 256);
  EXPECT_EQ(resolve_model(cfg).nc, 80);
}

TEST(ModelConfig, DepthWidthRulesRepeatsAndSpp) {
  const ModelConfig cfg = parse_model_config(kTiny, "tiny.yaml");
  EXPECT_EQ(cfg.rows.size(), 6u);
  const ModelSpec spec = resolve_model(cfg);
  EXPECT_EQ(spec.layers[0].c_out, 16);  // make_divisible(32*0.5, 8)
  EXPECT_EQ(spec.layers[1].n, 2);       // round(3*0.5) = round(1.5) = 2 (half to even)
  EXPECT_EQ(spec.layers[1].repeats, 2);  // Conv repeats stay a sequence
  EXPECT_EQ(spec.layers[2].n, 2);        // round(4*0.5)
  EXPECT_EQ(spec.layers[2].repeats, 1);  // C3 takes n as its argument
  EXPECT_EQ(to_json(spec.layers[2].args), nlohmann::json::parse("[32, 32, 2]"));
  EXPECT_EQ(std::get<SPPArgs>(spec.layers[3].typed).k, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(spec.layers[4].c_out, 64);  // 32 + 32
  EXPECT_EQ(std::get<DetectArgs>(spec.layers[5].typed).ch, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(spec.save, (std::vector<int64_t>{1, 1, 4}));
  EXPECT_EQ(make_divisible(0.25 * 1024, 8), 256);
  EXPECT_EQ(make_divisible(0.75 * 36, 8), 32);
  EXPECT_EQ(make_divisible(8.0001, 8), 16);
}

TEST(ModelConfig, AnchorCountGivesPlaceholderAnchors) {
  std::string text = kTiny;
  text.replace(text.find("anchors:\n"), std::string("anchors:\n  - [10,13, 16,30]\n  - [30,61, 62,45]\n").size(),
               "anchors: 2\n");
  const ModelSpec spec = resolve_model(parse_model_config(text, "count.yaml"));
  EXPECT_EQ(spec.na, 2);
  const auto& det = std::get<DetectArgs>(spec.layers.back().typed);
  ASSERT_EQ(det.anchors.size(), 2u);
  EXPECT_EQ(det.anchors[1], (std::vector<double>{0, 1, 2, 3}));
}

TEST(ModelConfig, PythonReprOfArguments) {
  EXPECT_EQ(python_repr(std::vector<Arg>{Arg::none(), Arg::integer(2), Arg::string("nearest")}),
            "[None, 2, 'nearest']");
  EXPECT_EQ(python_repr(std::vector<Arg>{Arg::boolean(false), Arg::real(0.5), Arg::real(1.0)}),
            "[False, 0.5, 1.0]");
}

TEST(ModelConfig, FileBeatsBuiltinAndBuiltinsResolveByName) {
  const std::string dir = test::temp_dir("model_cfg");
  const std::string path = dir + "/yolov5n.yaml";
  std::ofstream(path) << kTiny;
  EXPECT_EQ(load_model_config(path).nc, 4);
  EXPECT_EQ(load_model_config(path).name, "yolov5n.yaml");
  EXPECT_EQ(load_model_config("yolov5n").nc, 80);
  EXPECT_EQ(load_model_config("models/yolov5m.yaml").depth_multiple, 0.67);
  EXPECT_EQ(builtin_model_names(), (std::vector<std::string>{"yolo11.yaml", "yolov5l.yaml", "yolov5m.yaml", "yolov5n.yaml",
                                                              "yolov5s.yaml", "yolov5u.yaml", "yolov5x.yaml", "yolov8.yaml"}));
  const std::string err = error_of([] { load_model_config("yolov9q.yaml"); });
  EXPECT_NE(err.find("yolov9q.yaml"), std::string::npos) << err;
  EXPECT_NE(err.find("yolov5n.yaml"), std::string::npos) << err;
}

// Ultralytics' naming: a scale letter after the version picks a row of the family yaml's `scales`,
// and the choice is written into the config text so a checkpoint rebuilds the same model.
TEST(ModelConfig, UltralyticsScaledNamesPickTheirScale) {
  EXPECT_EQ(scale_in_name("yolo11s.yaml"), "s");
  EXPECT_EQ(scale_in_name("path/to/yolov8x-custom.yaml"), "x");
  EXPECT_EQ(scale_in_name("yolov5nu.yaml"), "n");
  EXPECT_EQ(scale_in_name("yolov8.yaml"), "");
  EXPECT_EQ(scale_in_name("my_detector.yaml"), "");
  const ModelConfig m = load_model_config("yolov8m");
  EXPECT_TRUE(m.ultralytics);
  EXPECT_EQ(m.name, "yolov8m.yaml");
  EXPECT_EQ(m.scale, "m");
  EXPECT_DOUBLE_EQ(m.depth_multiple, 0.67);
  EXPECT_DOUBLE_EQ(m.width_multiple, 0.75);
  EXPECT_DOUBLE_EQ(m.max_channels, 768);
  const ModelConfig again = parse_model_config(m.text, "checkpoint yaml");
  EXPECT_EQ(again.scale, "m");
  EXPECT_DOUBLE_EQ(again.max_channels, 768);
  EXPECT_EQ(load_model_config("yolov5su.yaml").scale, "s");
  // YOLO11 at m, l and x builds its C3k2 blocks from C3k whatever the row says.
  const ModelSpec x = resolve_model(load_model_config("yolo11x.yaml"));
  EXPECT_EQ(python_repr(x.layers[2].args), "[192, 384, 2, True, 0.25]");  // as Ultralytics logs it
  EXPECT_EQ(std::get<C2fArgs>(x.layers[2].typed).block, C2fArgs::Block::c3k);
  EXPECT_FALSE(std::get<DflDetectArgs>(x.layers.back().typed).legacy);
  EXPECT_TRUE(std::get<DflDetectArgs>(resolve_model(load_model_config("yolov8n")).layers.back().typed).legacy);
}

TEST(ModelConfig, UltralyticsYamlErrorsNameTheFile) {
  const std::string yolov8 = load_model_config("yolov8n").text;
  std::string end2end = "end2end: True\n" + yolov8;
  EXPECT_NE(error_of([&] { parse_model_config(end2end, "e2e.yaml"); }).find("e2e.yaml: end2end"), std::string::npos);
  std::string no_such_scale = yolov8;
  no_such_scale.replace(no_such_scale.find("scale: n"), 8, "scale: q");
  EXPECT_NE(error_of([&] { parse_model_config(no_such_scale, "q.yaml"); }).find("scale 'q' is not among its 'scales'"), std::string::npos);
  std::string unknown = yolov8;
  unknown.replace(unknown.find("C2f, [128, True]"), 3, "C9x");
  const std::string err = error_of([&] { resolve_model(parse_model_config(unknown, "u.yaml")); });
  EXPECT_NE(err.find("u.yaml backbone row 2 (layer 2): unknown module 'C9x' (known: Conv, Bottleneck, C3, C2f, C3k2, C2PSA"), std::string::npos) << err;
  std::string psa = load_model_config("yolo11n").text;
  psa.replace(psa.find("C2PSA, [1024]"), 13, "C2PSA, [512]");
  EXPECT_NE(error_of([&] { resolve_model(parse_model_config(psa, "psa.yaml")); }).find("C2PSA needs as many output channels as input channels"),
            std::string::npos);
  // A scaled file of the user's without a scale in its name gets the first row, as in Ultralytics.
  std::string unnamed = yolov8;
  unnamed.erase(0, unnamed.find('\n') + 1);  // drop the `scale: n` line
  EXPECT_EQ(parse_model_config(unnamed, "detector.yaml").scale, "n");
}

TEST(ModelConfig, ErrorsNameTheFileAndRow) {
  std::string unknown = kTiny;
  unknown.replace(unknown.find("SPP,"), 4, "Foo,");
  std::string err = error_of([&] { resolve_model(parse_model_config(unknown, "bad.yaml")); });
  EXPECT_NE(err.find("bad.yaml head row 0 (layer 3)"), std::string::npos) << err;
  EXPECT_NE(err.find("unknown module 'Foo'"), std::string::npos) << err;

  std::string short_row = kTiny;
  short_row.replace(short_row.find("[-1, 4, C3, [64]]"), 17, "[-1, C3, [64]]");
  err = error_of([&] { parse_model_config(short_row, "short.yaml"); });
  EXPECT_NE(err.find("short.yaml backbone row 2 (layer 2)"), std::string::npos) << err;

  std::string bad_from = kTiny;
  bad_from.replace(bad_from.find("[[1, 4], 1, Detect"), 7, "[[1, 9]");
  err = error_of([&] { resolve_model(parse_model_config(bad_from, "from.yaml")); });
  EXPECT_NE(err.find("from.yaml head row 2 (layer 5)"), std::string::npos) << err;

  std::string bad_arg = kTiny;
  bad_arg.replace(bad_arg.find("[32, 3, 2]"), 10, "[32, 'x', 2]");
  err = error_of([&] { resolve_model(parse_model_config(bad_arg, "arg.yaml")); });
  EXPECT_NE(err.find("arg.yaml backbone row 0 (layer 0)"), std::string::npos) << err;
  EXPECT_NE(err.find("(k)"), std::string::npos) << err;

  err = error_of([] { parse_model_config("nc: 3\n", "empty.yaml"); });
  EXPECT_NE(err.find("empty.yaml"), std::string::npos) << err;
}

// Sizes a hostile or mistyped yaml gives are refused with the file (and the layer), before LibTorch
// would see a negative or absurd dimension.
TEST(ModelConfig, AbsurdSizesAreRefusedWithTheFileAndLayer) {
  auto with = [](const std::string& from, const std::string& to) {
    std::string y = kTiny;
    y.replace(y.find(from), from.size(), to);
    return y;
  };
  std::string err = error_of([&] { parse_model_config(with("width_multiple: 0.5", "width_multiple: -0.5"), "neg.yaml"); });
  EXPECT_NE(err.find("neg.yaml: 'width_multiple' must be in (0, 16]"), std::string::npos) << err;
  err = error_of([&] { parse_model_config(with("depth_multiple: 0.5", "depth_multiple: 0"), "zero.yaml"); });
  EXPECT_NE(err.find("zero.yaml: 'depth_multiple'"), std::string::npos) << err;
  err = error_of([&] { parse_model_config(with("nc: 4", "nc: -3"), "nc.yaml"); });
  EXPECT_NE(err.find("nc.yaml: 'nc' must be 1..100000"), std::string::npos) << err;
  err = error_of([&] { resolve_model(parse_model_config(kTiny, "tiny.yaml"), 0); });
  EXPECT_NE(err.find("tiny.yaml: the model cannot have 0 classes"), std::string::npos) << err;
  err = error_of([&] { resolve_model(parse_model_config(with("[32, 3, 2]", "[-64, 3, 2]"), "chan.yaml")); });
  EXPECT_NE(err.find("chan.yaml backbone row 0 (layer 0): Conv would have"), std::string::npos) << err;
  err = error_of([&] { resolve_model(parse_model_config(with("[-1, 4, C3, [64]]", "[-1, 400000, C3, [64]]"), "deep.yaml")); });
  EXPECT_NE(err.find("deep.yaml backbone row 2 (layer 2): 'number' x depth_multiple"), std::string::npos) << err;
}

}  // namespace
}  // namespace kestrel
