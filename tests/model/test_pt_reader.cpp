// The .pt checkpoint reader: the official yolov5n.pt against the reference state_dict, a tiny
// hand-built checkpoint checked value by value, and malformed inputs that must fail cleanly.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>

#include "model/pt_archive.h"
#include "model/pt_reader.h"
#include "pt_fixtures.h"
#include "torch_support.h"

namespace kestrel {
namespace {

using test::Bytes;
using test::PickleWriter;

std::string write_temp(const std::string& name, const Bytes& bytes) {
  const std::string path = test::temp_dir("pt_reader") + "/" + name;
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                              static_cast<std::streamsize>(bytes.size()));
  return path;
}

PtArchive archive_of(const Bytes& bytes) {
  return PtArchive(std::make_shared<const std::vector<uint8_t>>(bytes), "test.pt");
}

pickle::Document pickle_of(const Bytes& bytes, const pickle::Limits& limits = {}) {
  return pickle::parse_pickle({bytes.data(), bytes.size()}, "test.pkl", limits);
}

// Expects a FormatError whose message contains `needle`.
template <typename F>
void expect_format_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(PtReader, Yolov5nMatchesReferenceStateDict) {
  KESTREL_REQUIRE_SHARED(weights, "weights/yolov5n.pt");
  const PtCheckpoint ckpt = read_pt_checkpoint(weights);
  const auto& ref = test::reference("model_yolov5n.json")["state_dict"];
  ASSERT_EQ(ckpt.state_order.size(), ref.size());
  ASSERT_EQ(ckpt.state.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    const std::string name = ref[i][0];
    EXPECT_EQ(ckpt.state_order[i], name);
    const torch::Tensor& t = ckpt.state.at(name);
    EXPECT_EQ(t.sizes().vec(), ref[i][1].get<std::vector<int64_t>>()) << name;
    EXPECT_EQ(t.scalar_type(), ref[i][2] == "int64" ? torch::kInt64 : torch::kFloat32) << name;
    EXPECT_TRUE(t.is_contiguous()) << name;
  }
  EXPECT_EQ(ckpt.source, "model");
  EXPECT_EQ(ckpt.nc, 80);
  ASSERT_EQ(ckpt.names.size(), 80u);
  EXPECT_EQ(ckpt.names.front(), "person");
  EXPECT_EQ(ckpt.names.back(), "toothbrush");
  EXPECT_EQ(ckpt.stride, (std::vector<double>{8, 16, 32}));
  EXPECT_EQ(ckpt.epoch, -1);
  EXPECT_FALSE(ckpt.best_fitness.has_value());

  // fp16 anchors widened to float32 are exact.
  const auto& fwd = test::reference("forward_yolov5n.json");
  EXPECT_TRUE(torch::equal(ckpt.state.at("model.24.anchors"), test::json_tensor(fwd["anchors_grid_units"])));

  const YAML::Node yaml = YAML::Load(ckpt.model_yaml);
  EXPECT_EQ(yaml["nc"].as<int>(), 80);
  EXPECT_EQ(yaml["depth_multiple"].as<double>(), 0.33);
  EXPECT_EQ(yaml["width_multiple"].as<double>(), 0.25);
  EXPECT_EQ(yaml["anchors"][2][5].as<int>(), 326);
  EXPECT_EQ(yaml["backbone"].size(), 10u);
  ASSERT_EQ(yaml["head"].size(), 15u);
  EXPECT_EQ(yaml["head"][1][3][0].as<std::string>(), "None");
  EXPECT_EQ(yaml["head"][1][3][2].as<std::string>(), "nearest");
  EXPECT_FALSE(yaml["head"][13][3][1].as<bool>());
  EXPECT_EQ(yaml["head"][14][2].as<std::string>(), "Detect");
}

TEST(PtReader, TinyCheckpointValues) {
  const PtCheckpoint ckpt = read_pt_checkpoint(write_temp("tiny.pt", test::tiny_checkpoint()));
  EXPECT_EQ(ckpt.state_order, (std::vector<std::string>{"model.0.weight", "model.0.idx", "model.0.wt"}));
  const torch::Tensor weight = torch::arange(1, 7, torch::kFloat32).reshape({2, 3});
  EXPECT_TRUE(torch::equal(ckpt.state.at("model.0.weight"), weight));
  EXPECT_TRUE(torch::equal(ckpt.state.at("model.0.wt"), weight.t()));
  EXPECT_TRUE(ckpt.state.at("model.0.wt").is_contiguous());
  EXPECT_TRUE(torch::equal(ckpt.state.at("model.0.idx"), torch::tensor({7, -3}, torch::kInt64)));
  EXPECT_EQ(ckpt.names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(ckpt.nc, 2);
  EXPECT_EQ(ckpt.stride, (std::vector<double>{8, 16}));
  EXPECT_EQ(ckpt.epoch, 7);
  EXPECT_EQ(ckpt.best_fitness, 0.25);
  EXPECT_EQ(ckpt.model_yaml,
            "nc: 2\ndepth_multiple: 0.33\nbackbone:\n  - [-1, 1, Conv, [2, 3]]\n"
            "head:\n  - [-1, 1, nn.Upsample, [None, 2, nearest]]\n");
}

TEST(PtReader, EmaWhenModelIsNoneAndZip64) {
  const PtArchive a = archive_of(test::tiny_checkpoint(/*model_is_none=*/true, /*zip64=*/true));
  EXPECT_EQ(a.source(), "ema");
  EXPECT_EQ(a.state().size(), 3u);
}

TEST(PtReader, YamlQuotesWhatPlainScalarsWouldChange) {
  PickleWriter p;
  p.op('}').mark().str("a").str("yes").str("b").str("").str("c").str("x: \"y\"\n").str("d").real(2.0);
  p.str("e").real(0.1).str("f").none().str("g").boolean(true).op('u').op('.');
  const Bytes b = p.bytes();
  const pickle::Document doc = pickle_of(b);
  const std::string text = pickle_to_yaml(doc, doc.root());
  const YAML::Node y = YAML::Load(text);
  EXPECT_EQ(y["a"].as<std::string>(), "yes");
  EXPECT_EQ(y["b"].as<std::string>(), "");
  EXPECT_EQ(y["c"].as<std::string>(), "x: \"y\"\n");
  EXPECT_EQ(y["d"].as<double>(), 2.0);
  EXPECT_NE(text.find("d: 2.0\n"), std::string::npos) << text;
  EXPECT_EQ(y["e"].as<double>(), 0.1);
  EXPECT_TRUE(y["f"].IsNull());
  EXPECT_TRUE(y["g"].as<bool>());
}

TEST(PtReaderMalformed, EveryTruncationFailsCleanly) {
  const Bytes full = test::tiny_checkpoint();
  for (size_t n = 0; n < full.size(); ++n) {
    const Bytes cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_THROW(archive_of(cut), FormatError) << "prefix of " << n << " bytes";
  }
  EXPECT_NO_THROW(archive_of(full));
}

TEST(PtReaderMalformed, TruncatedRealFile) {
  KESTREL_REQUIRE_SHARED(weights, "weights/yolov5n.pt");
  const auto bytes = read_file_bytes(weights);
  const Bytes half(bytes->begin(), bytes->begin() + static_cast<std::ptrdiff_t>(bytes->size() / 2));
  const std::string path = write_temp("half.pt", half);
  expect_format_error([&] { read_pt_checkpoint(path); }, path + ": not a zip archive");
}

TEST(PtReaderMalformed, BadZip) {
  expect_format_error([] { archive_of(Bytes(100, 'x')); }, "test.pt: not a zip archive");
  expect_format_error([] { read_pt_checkpoint("/nonexistent/x.pt"); }, "/nonexistent/x.pt: cannot open");
  expect_format_error([] { archive_of(test::make_zip({{"a/other", {1, 2}}})); }, "no <archive>/data.pkl");
  expect_format_error([] { archive_of(test::make_zip({{"a/data.pkl", {'.'}, 8}})); },
                      "entry 'a/data.pkl' is compressed (method 8)");
  // A central directory claiming 65535 entries in 46 bytes.
  Bytes many = test::make_zip({{"a/data.pkl", {'N', '.'}}});
  many[many.size() - 12] = many[many.size() - 11] = 0xFF;
  many[many.size() - 14] = many[many.size() - 13] = 0xFF;
  expect_format_error([&] { archive_of(many); }, "implausible entry count 65535");
  // A corrupted storage byte is caught by the CRC.
  Bytes corrupt = test::tiny_checkpoint();
  const Bytes half = test::tiny_half_storage();
  const auto at = std::search(corrupt.begin(), corrupt.end(), half.begin(), half.end());
  ASSERT_NE(at, corrupt.end());
  *at ^= 1;
  expect_format_error([&] { archive_of(corrupt); }, "CRC mismatch in entry 'tiny/data/0'");
}

TEST(PtReaderMalformed, UnknownOpcode) {
  PickleWriter p;
  p.proto().global("os", "system").str("echo hi").op('i');  // INST: never supported
  expect_format_error([&] { pickle_of(p.bytes()); }, "unsupported opcode 0x69 at byte 25");
  expect_format_error([] { pickle_of({0x80, 2, 'N'}); }, "truncated data");  // no STOP
}

TEST(PtReaderMalformed, CallsStayInert) {
  // os.system('echo hi') becomes an Object naming the call; nothing runs.
  PickleWriter p;
  p.global("os", "system").str("echo hi").op(0x85).op('R').op('.');
  const Bytes b = p.bytes();
  const pickle::Document doc = pickle_of(b);
  EXPECT_EQ(doc.class_name(doc.root()), "os.system");
  expect_format_error([&] { archive_of(test::make_zip({{"a/data.pkl", b}})); },
                      "data.pkl does not hold a dict");
}

TEST(PtReaderMalformed, NestingAndSizeBombs) {
  PickleWriter marks;
  for (int i = 0; i < 10000; ++i) marks.mark();
  expect_format_error([&] { pickle_of(marks.bytes()); }, "MARKs nested too deeply");

  PickleWriter stack;
  for (int i = 0; i < 100; ++i) stack.none();
  pickle::Limits small;
  small.max_stack = 50;
  expect_format_error([&] { pickle_of(stack.bytes(), small); }, "stack too deep");

  // A 100000-deep tuple parses (iteratively) but cannot be emitted as yaml.
  PickleWriter deep;
  deep.op('}').str("k").none();
  for (int i = 0; i < 100000; ++i) deep.op(0x85);
  deep.op('s').op('.');
  const Bytes deep_bytes = deep.bytes();
  const pickle::Document deep_doc = pickle_of(deep_bytes);
  expect_format_error([&] { pickle_to_yaml(deep_doc, deep_doc.root()); }, "nested deeper than 32");

  // A list containing itself (through the memo).
  PickleWriter cycle;
  cycle.op('}').str("k").op(']').op('q').op(0).op('h').op(0).op('a').op('s').op('.');
  const Bytes cycle_bytes = cycle.bytes();
  const pickle::Document cycle_doc = pickle_of(cycle_bytes);
  expect_format_error([&] { pickle_to_yaml(cycle_doc, cycle_doc.root()); }, "nested deeper");

  // Exponential sharing: l1 = [l0, l0], l2 = [l1, l1], ... must hit the output cap, not hang.
  PickleWriter wide;
  wide.op('}').str("k").op(']').op('q').op(0).op('0');
  for (uint8_t i = 1; i <= 30; ++i) {
    wide.op(']').mark().op('h').op(i - 1).op('h').op(i - 1).op('e').op('q').op(i).op('0');
  }
  wide.op('h').op(30).op('s').op('.');
  const Bytes wide_bytes = wide.bytes();
  const pickle::Document wide_doc = pickle_of(wide_bytes);
  expect_format_error([&] { pickle_to_yaml(wide_doc, wide_doc.root()); }, "longer than 1 MiB");
}

TEST(PtReaderMalformed, HugeLengthFields) {
  expect_format_error([] { pickle_of({'X', 0xFF, 0xFF, 0xFF, 0xFF, 'a'}); }, "truncated data");
  expect_format_error([] { pickle_of({0x8d, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}); },
                      "truncated data");
  expect_format_error([] { pickle_of({'h', 200}); }, "memo key 200 not defined");
  expect_format_error([] { pickle_of({0x8a, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9}); }, "wider than 64 bits");

  auto with_tensor = [](int32_t numel, int32_t offset, std::vector<int32_t> sizes,
                        std::vector<int32_t> strides) {
    PickleWriter p;
    p.op('}').str("t").tensor("FloatStorage", "0", numel, offset, sizes, strides).op('s').op('.');
    return p.bytes();
  };
  expect_format_error([&] { pickle_of(with_tensor(4, 0, {5}, {1})); }, "tensor extends past its storage");
  expect_format_error([&] { pickle_of(with_tensor(4, 2, {2, 2}, {1, 1})); }, "extends past");
  expect_format_error([&] { pickle_of(with_tensor(4, 0, {0x7FFFFFFF, 0x7FFFFFFF, 0x7FFFFFFF},
                                                  {0x7FFFFFFF, 0x7FFFFFFF, 0x7FFFFFFF})); },
                      "overflows");
  expect_format_error([&] { pickle_of(with_tensor(4, -1, {1}, {1})); }, "negative tensor offset");
  expect_format_error([&] { pickle_of(with_tensor(4, 0, {65536, 65536}, {0, 0})); },
                      "more elements than its storage");
  EXPECT_NO_THROW(pickle_of(with_tensor(4, 3, {0, 9}, {1, 1})));  // empty tensors address nothing

  // A storage declaring a billion floats backed by 16 bytes.
  PickleWriter model;
  model.op('}').str("model").module_begin("m", "M").str("w");
  model.tensor("FloatStorage", "0", 1000000000, 0, {1}, {1}).module_buffers().module_children();
  model.module_attributes().module_end().op('s').op('.');
  expect_format_error(
      [&] { archive_of(test::make_zip({{"a/data.pkl", model.bytes()}, {"a/data/0", Bytes(16)}})); },
      "storage 'a/data/0' holds 16 bytes, fewer than its 1000000000 Float elements need");
  expect_format_error([&] { archive_of(test::make_zip({{"a/data.pkl", model.bytes()}})); },
                      "missing entry 'a/data/0'");
}

}  // namespace
}  // namespace kestrel
