// ONNX ModelProto encoding. Field numbers are onnx/onnx.proto's (IR version 7, which opsets up to 12
// belong to); repeated scalars are written unpacked, which every protobuf parser accepts.
#include "export/onnx_model.h"

#include <cstring>
#include <numeric>
#include <stdexcept>

#include "export/protobuf_writer.h"

namespace kestrel {

namespace {
constexpr int64_t kFloat = 1, kInt64 = 7;  // TensorProto.DataType
constexpr int64_t kIrVersion = 7;

int64_t element_count(const std::vector<int64_t>& dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
}

// ValueInfoProto{name, type: TypeProto{tensor_type: {elem_type FLOAT, shape: dims}}}.
std::string value_info(const std::string& name, const std::vector<int64_t>& dims) {
  ProtoWriter shape;
  for (int64_t d : dims) {
    ProtoWriter dim;
    dim.add_varint(1, d);  // dim_value
    shape.add_message(1, dim);
  }
  ProtoWriter tensor_type;
  tensor_type.add_varint(1, kFloat);
  tensor_type.add_message(2, shape);
  ProtoWriter type;
  type.add_message(1, tensor_type);
  ProtoWriter info;
  info.add_bytes(1, name);
  info.add_message(2, type);
  return info.bytes();
}

// TensorProto{dims, data_type, name, raw_data} (raw_data little-endian, as this machine stores it).
template <typename T>
std::string tensor(const std::string& name, int64_t data_type, const std::vector<int64_t>& dims, const std::vector<T>& values) {
  if (element_count(dims) != static_cast<int64_t>(values.size()))
    throw std::invalid_argument("ONNX tensor " + name + ": " + std::to_string(values.size()) +
                                " values for a shape of " + std::to_string(element_count(dims)));
  ProtoWriter t;
  for (int64_t d : dims) t.add_varint(1, d);
  t.add_varint(2, data_type);
  t.add_bytes(8, name);
  std::string raw(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(raw.data(), values.data(), raw.size());
  t.add_bytes(9, raw);
  return t.bytes();
}

std::string attribute(const OnnxAttribute& a) {
  ProtoWriter w;
  w.add_bytes(1, a.name);
  switch (a.type) {
    case OnnxAttribute::Type::Int: w.add_varint(3, a.i); break;
    case OnnxAttribute::Type::String: w.add_bytes(4, a.s); break;
    case OnnxAttribute::Type::Ints:
      for (int64_t v : a.ints) w.add_varint(8, v);
      break;
  }
  w.add_varint(20, static_cast<int64_t>(a.type));
  return w.bytes();
}
}  // namespace

OnnxAttribute OnnxAttribute::of_int(std::string name, int64_t v) { return {.name = std::move(name), .type = Type::Int, .i = v}; }
OnnxAttribute OnnxAttribute::of_string(std::string name, std::string v) {
  return {.name = std::move(name), .type = Type::String, .s = std::move(v)};
}
OnnxAttribute OnnxAttribute::of_ints(std::string name, std::vector<int64_t> v) {
  return {.name = std::move(name), .type = Type::Ints, .ints = std::move(v)};
}

void OnnxGraph::add_input(const std::string& name, const std::vector<int64_t>& dims) {
  inputs_.push_back(value_info(name, dims));
}

void OnnxGraph::add_output(const std::string& name, const std::vector<int64_t>& dims) {
  outputs_.push_back(value_info(name, dims));
}

std::string OnnxGraph::add_floats(const std::string& name, const std::vector<int64_t>& dims,
                                  const std::vector<float>& values) {
  initializers_.push_back(tensor(name, kFloat, dims, values));
  return name;
}

std::string OnnxGraph::add_int64s(const std::string& name, const std::vector<int64_t>& dims,
                                  const std::vector<int64_t>& values) {
  initializers_.push_back(tensor(name, kInt64, dims, values));
  return name;
}

std::string OnnxGraph::add_node(const std::string& op_type, const std::vector<std::string>& inputs,
                                const std::string& output, const std::vector<OnnxAttribute>& attributes) {
  ProtoWriter node;
  for (const auto& in : inputs) node.add_bytes(1, in);
  node.add_bytes(2, output);
  node.add_bytes(3, output);  // the node takes its output's name: unique, and readable in viewers
  node.add_bytes(4, op_type);
  for (const auto& a : attributes) node.add_bytes(5, attribute(a));
  nodes_.push_back(node.bytes());
  ++node_count_;
  return output;
}

std::string OnnxGraph::serialize(int64_t opset, const std::string& producer,
                                 const std::vector<std::pair<std::string, std::string>>& metadata) const {
  ProtoWriter graph;
  for (const auto& n : nodes_) graph.add_bytes(1, n);
  graph.add_bytes(2, name_);
  for (const auto& t : initializers_) graph.add_bytes(5, t);
  for (const auto& i : inputs_) graph.add_bytes(11, i);
  for (const auto& o : outputs_) graph.add_bytes(12, o);

  ProtoWriter opset_id;
  opset_id.add_bytes(1, "");
  opset_id.add_varint(2, opset);
  ProtoWriter model;
  model.add_varint(1, kIrVersion);
  model.add_bytes(2, producer);
  model.add_message(7, graph);
  model.add_message(8, opset_id);
  for (const auto& [key, value] : metadata) {
    ProtoWriter entry;
    entry.add_bytes(1, key);
    entry.add_bytes(2, value);
    model.add_message(14, entry);
  }
  return model.bytes();
}

}  // namespace kestrel
