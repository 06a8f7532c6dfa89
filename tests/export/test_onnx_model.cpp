// The ONNX writer: protobuf wire bytes against the encoding guide's own examples, and small graphs of
// every operator the exporter uses, read by OpenCV dnn and compared with LibTorch's ops on the
// same numbers.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/atomic_file.h"
#include "export/onnx_model.h"
#include "export/opencv_onnx.h"
#include "export/protobuf_writer.h"
#include "test_support.h"

namespace kestrel {
namespace {

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    if (!out.empty()) out.push_back(' ');
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::vector<float> values_of(const torch::Tensor& t) {
  const torch::Tensor c = t.contiguous();
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

std::vector<int64_t> dims_of(const torch::Tensor& t) { return {t.sizes().begin(), t.sizes().end()}; }

// Writes the graph and runs `input` through it with OpenCV.
torch::Tensor run_with_opencv(const OnnxGraph& graph, const torch::Tensor& input, const std::string& name) {
  const std::string path = test::temp_dir("onnx_model") + "/" + name + ".onnx";
  write_file_atomic(path, graph.serialize(12, "kestrel-test", {}));
  OpenCvOnnxModel model(path);
  return model.forward(input);
}

TEST(ProtoWriter, MatchesTheEncodingGuide) {
  ProtoWriter a;
  a.add_varint(1, 150);  // the guide's first example: 08 96 01
  EXPECT_EQ(hex(a.bytes()), "08 96 01");
  ProtoWriter b;
  b.add_bytes(2, "testing");
  EXPECT_EQ(hex(b.bytes()), "12 07 74 65 73 74 69 6e 67");
  ProtoWriter c;
  c.add_message(3, a);  // an embedded message: 1a 03 08 96 01
  EXPECT_EQ(hex(c.bytes()), "1a 03 08 96 01");
  ProtoWriter d;
  d.add_varint(1, -2);  // int64 -2: ten bytes of two's complement
  EXPECT_EQ(hex(d.bytes()), "08 fe ff ff ff ff ff ff ff ff 01");
}

TEST(OnnxGraph, TensorsMustHoldTheirShape) {
  OnnxGraph g("g");
  EXPECT_THROW(g.add_floats("w", {2, 3}, {1, 2, 3}), std::invalid_argument);
}

// Conv with bias and padding, SiLU as Sigmoid * x, MaxPool, nearest Resize and Concat: the
// backbone's operators.
TEST(OnnxGraph, BackboneOperatorsMatchLibTorch) {
  torch::manual_seed(1);
  const torch::Tensor x = torch::rand({1, 2, 5, 7});
  const torch::Tensor w = torch::randn({3, 2, 3, 3}), bias = torch::randn({3});
  namespace F = torch::nn::functional;
  const torch::Tensor y = torch::conv2d(x, w, bias, 1, 1);
  const torch::Tensor pooled = F::max_pool2d(torch::silu(y), F::MaxPool2dFuncOptions(3).stride(1).padding(1));
  const auto up = [](const torch::Tensor& t) {
    return F::interpolate(t, F::InterpolateFuncOptions().scale_factor(std::vector<double>{2, 2}).mode(torch::kNearest));
  };
  const torch::Tensor expected = torch::cat({up(pooled), up(x)}, 1);

  OnnxGraph g("backbone");
  g.add_input("x", dims_of(x));
  const std::string conv = g.add_node("Conv", {"x", g.add_floats("w", dims_of(w), values_of(w)), g.add_floats("b", {3}, values_of(bias))},
                                      "conv",
                                      {OnnxAttribute::of_ints("kernel_shape", {3, 3}), OnnxAttribute::of_ints("pads", {1, 1, 1, 1}),
                                       OnnxAttribute::of_ints("strides", {1, 1}), OnnxAttribute::of_int("group", 1)});
  const std::string silu = g.add_node("Mul", {conv, g.add_node("Sigmoid", {conv}, "gate")}, "silu");
  const std::string pool = g.add_node("MaxPool", {silu}, "pool",
                                      {OnnxAttribute::of_ints("kernel_shape", {3, 3}), OnnxAttribute::of_ints("strides", {1, 1}),
                                       OnnxAttribute::of_ints("pads", {1, 1, 1, 1})});
  const auto resize = [&](const std::string& in, const std::string& name) {
    return g.add_node("Resize", {in, g.add_floats(name + ".roi", {0}, {}), g.add_floats(name + ".scales", {4}, {1, 1, 2, 2})}, name,
                      {OnnxAttribute::of_string("mode", "nearest"),
                       OnnxAttribute::of_string("coordinate_transformation_mode", "asymmetric"),
                       OnnxAttribute::of_string("nearest_mode", "floor")});
  };
  g.add_node("Concat", {resize(pool, "up_pool"), resize("x", "up_x")}, "out", {OnnxAttribute::of_int("axis", 1)});
  g.add_output("out", dims_of(expected));
  EXPECT_EQ(g.node_count(), 7u);

  const torch::Tensor got = run_with_opencv(g, x, "backbone");
  ASSERT_EQ(got.sizes(), expected.sizes());
  EXPECT_LT(largest_relative_difference(got, expected), 1e-5);
}

// Reshape, Transpose, Slice, elementwise Mul/Add with constants and Concat on the last axis: the
// Detect head's decoding operators.
TEST(OnnxGraph, HeadOperatorsMatchLibTorch) {
  torch::manual_seed(2);
  const int64_t na = 2, no = 6, ny = 3, nx = 4;
  const torch::Tensor x = torch::randn({1, na * no, ny, nx});
  const torch::Tensor offset = torch::randn({1, na, ny * nx, 2}), scale = torch::rand({1, na, ny * nx, 2});
  const torch::Tensor s = x.view({1, na, no, ny * nx}).permute({0, 1, 3, 2}).sigmoid();
  const torch::Tensor xy = s.slice(3, 0, 2) * 16 + offset, wh = s.slice(3, 2, 4) * s.slice(3, 2, 4) * scale;
  const torch::Tensor expected = torch::cat({xy, wh, s.slice(3, 4)}, 3).reshape({1, na * ny * nx, no});

  OnnxGraph g("head");
  g.add_input("x", dims_of(x));
  const auto ints = [&](const std::string& name, const std::vector<int64_t>& v) {
    return g.add_int64s(name, {static_cast<int64_t>(v.size())}, v);
  };
  const std::string r = g.add_node("Reshape", {"x", ints("shape", {1, na, no, ny * nx})}, "r");
  const std::string sg = g.add_node("Sigmoid", {g.add_node("Transpose", {r}, "t", {OnnxAttribute::of_ints("perm", {0, 1, 3, 2})})}, "s");
  const auto slice = [&](int64_t b, int64_t e, const std::string& name) {
    return g.add_node("Slice", {sg, ints(name + ".b", {b}), ints(name + ".e", {e}), ints(name + ".a", {3})}, name);
  };
  const std::string sxy = slice(0, 2, "sxy"), swh = slice(2, 4, "swh"), sconf = slice(4, no, "sconf");
  const std::string gxy = g.add_node("Add", {g.add_node("Mul", {sxy, g.add_floats("k", {1}, {16})}, "xy16"),
                                             g.add_floats("offset", dims_of(offset), values_of(offset))},
                                     "xy");
  const std::string gwh = g.add_node("Mul", {g.add_node("Mul", {swh, swh}, "wh2"), g.add_floats("scale", dims_of(scale), values_of(scale))}, "wh");
  const std::string cat = g.add_node("Concat", {gxy, gwh, sconf}, "cat", {OnnxAttribute::of_int("axis", 3)});
  g.add_node("Reshape", {cat, ints("rows", {1, na * ny * nx, no})}, "out");
  g.add_output("out", dims_of(expected));

  const torch::Tensor got = run_with_opencv(g, x, "head");
  ASSERT_EQ(got.sizes(), expected.sizes());
  EXPECT_LT(largest_relative_difference(got, expected), 1e-5);
}

TEST(OpenCvOnnxModel, NamesAFileItCannotRead) {
  const std::string path = test::temp_dir("onnx_model") + "/garbage.onnx";
  write_file_atomic(path, "not a model");
  try {
    OpenCvOnnxModel model(path);
    FAIL() << "read garbage";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("garbage.onnx"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kestrel
