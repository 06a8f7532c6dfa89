// A safe reader for the subset of Python pickle (protocols 2-4) that torch.save writes. It never
// executes anything: class references stay names, calls become generic objects (class + args +
// state), and only the torch tensor/parameter rebuilders and OrderedDict are interpreted. Every
// count, length and depth is bounded. No LibTorch, so it can be fuzzed.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/zip_reader.h"

namespace kestrel::pickle {

using NodeId = uint32_t;
constexpr NodeId kNoNode = 0xFFFFFFFFu;

enum class Kind : uint8_t {
  None, Bool, Int, Float, String, Bytes,
  List, Tuple, Dict,
  Global,   // a class or function reference: text = "module.name"
  Object,   // the result of calling / instantiating a Global: cls, args, state
  Storage,  // a tensor storage named by a persistent id: index into Document::storages()
  Tensor,   // torch._utils._rebuild_tensor_v2: index into Document::tensors()
};

// Element types of torch storages, by the storage class name (HalfStorage -> Half, ...).
enum class ScalarType : uint8_t { Half, BFloat16, Float, Double, Long, Int, Short, Char, Byte, Bool };
size_t element_size(ScalarType t);
const char* scalar_name(ScalarType t);

struct StorageRef {
  ScalarType dtype = ScalarType::Float;
  std::string key;    // the storage's file is <archive>/data/<key>
  uint64_t numel = 0; // elements, as the persistent id declares them
};

struct TensorRef {
  uint32_t storage = 0;  // index into Document::storages()
  int64_t offset = 0;    // in elements
  std::vector<int64_t> sizes, strides;
  bool parameter = false;  // wrapped by torch._utils._rebuild_parameter
};

struct Node {
  Kind kind = Kind::None;
  int64_t integer = 0;     // Int, Bool; Storage/Tensor: index into the side tables
  double real = 0;         // Float
  std::string text;        // String, Bytes, Global
  std::vector<NodeId> items;  // List/Tuple elements; Dict: key0, value0, key1, value1, ...
  NodeId cls = kNoNode, args = kNoNode, state = kNoNode;  // Object
};

struct Limits {
  size_t max_stack = 1u << 20;  // operand stack entries
  size_t max_marks = 1u << 12;  // nested MARKs
  size_t max_memo = 1u << 20;   // memo entries
  size_t max_nodes = 1u << 22;  // values created
  size_t max_dims = 16;         // tensor rank
};

class Document {
 public:
  NodeId root() const { return root_; }
  const Node& node(NodeId id) const;
  const std::vector<StorageRef>& storages() const { return storages_; }
  const std::vector<TensorRef>& tensors() const { return tensors_; }
  const TensorRef& tensor(NodeId id) const;  // the node must be a Tensor

  // The value stored under string key `key` in a Dict node (the last one set wins); kNoNode when
  // absent or when `dict` is not a Dict.
  NodeId get(NodeId dict, const std::string& key) const;
  // A Dict's entries as Python sees them: a key set twice keeps its first position and its last
  // value (keys compared by value for strings and integers). Throws when `dict` is not a Dict.
  std::vector<std::pair<NodeId, NodeId>> entries(NodeId dict) const;
  // An Object's BUILD state when it is a Dict (how nn.Module pickles its __dict__); else kNoNode.
  NodeId object_dict(NodeId object) const;
  // "module.name" of an Object's class ("" for anything else).
  std::string class_name(NodeId object) const;

 private:
  friend class Parser;
  std::vector<Node> nodes_;
  std::vector<StorageRef> storages_;
  std::vector<TensorRef> tensors_;
  NodeId root_ = kNoNode;
};

// Parses a pickle. Throws FormatError ("<label>: pickle: <what> at byte N") on anything malformed,
// unsupported or over a limit.
Document parse_pickle(ByteView bytes, const std::string& label, const Limits& limits = {});

}  // namespace kestrel::pickle
