// An ONNX model under construction: graph inputs and outputs, constant tensors (initializers) and
// nodes, serialised as an onnx.ModelProto with the field numbers of onnx/onnx.proto. Only what a
// convolutional detector needs: float and int64 tensors with fixed shapes, single-output nodes,
// int / ints / string attributes, the default operator domain.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kestrel {

struct OnnxAttribute {
  enum class Type { Int = 2, String = 3, Ints = 7 };  // AttributeProto.AttributeType
  std::string name;
  Type type = Type::Int;
  int64_t i = 0;
  std::string s;
  std::vector<int64_t> ints;

  static OnnxAttribute of_int(std::string name, int64_t v);
  static OnnxAttribute of_string(std::string name, std::string v);
  static OnnxAttribute of_ints(std::string name, std::vector<int64_t> v);
};

class OnnxGraph {
 public:
  explicit OnnxGraph(std::string name) : name_(std::move(name)) {}

  // Graph inputs and outputs: float32 tensors of fixed shape.
  void add_input(const std::string& name, const std::vector<int64_t>& dims);
  void add_output(const std::string& name, const std::vector<int64_t>& dims);
  // Constant tensors; `values` holds the product of `dims` numbers, row-major. Return `name`.
  std::string add_floats(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& values);
  std::string add_int64s(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& values);
  // A node of the default domain with one output, named `output`; returns `output`.
  std::string add_node(const std::string& op_type, const std::vector<std::string>& inputs, const std::string& output,
                              const std::vector<OnnxAttribute>& attributes = {});
  size_t node_count() const { return node_count_; }

  // The ModelProto bytes: this graph, `opset` of the default domain, the producer and metadata_props
  // (key, value) entries.
  std::string serialize(int64_t opset, const std::string& producer,
                        const std::vector<std::pair<std::string, std::string>>& metadata) const;

 private:
  std::string name_;
  std::vector<std::string> inputs_, outputs_, initializers_, nodes_;  // encoded messages, in order
  size_t node_count_ = 0;
};

}  // namespace kestrel
