// Interpreting torch.save's layout (data.pkl + data/<key> storages) and YOLOv5's checkpoint dict.
// nn.Module pickles as an object whose state is its __dict__: _parameters, _buffers and _modules
// OrderedDicts plus plain attributes; state_dict() is those maps walked depth-first.
#include "model/pt_archive.h"

#include "core/float_text.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

namespace kestrel {

using pickle::Kind;
using pickle::kNoNode;
using pickle::NodeId;

namespace {

constexpr int kMaxModuleDepth = 64;
constexpr size_t kMaxModuleVisits = 1u << 16;
constexpr int kMaxYamlDepth = 32;
constexpr size_t kMaxYamlBytes = 1u << 20;
constexpr uint64_t kMaxSmallTensor = 1u << 16;

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);  // inf / nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal half: normalise
    exp = 113;
    while (!(mant & 0x400)) {
      mant <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((mant & 0x3FF) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

double element_as_double(pickle::ScalarType t, const uint8_t* p) {
  using pickle::ScalarType;
  switch (t) {
    case ScalarType::Half: { uint16_t v; std::memcpy(&v, p, 2); return half_to_float(v); }
    case ScalarType::BFloat16: {
      uint16_t v; std::memcpy(&v, p, 2);
      const uint32_t bits = static_cast<uint32_t>(v) << 16;
      float f; std::memcpy(&f, &bits, 4); return f;
    }
    case ScalarType::Float: { float v; std::memcpy(&v, p, 4); return v; }
    case ScalarType::Double: { double v; std::memcpy(&v, p, 8); return v; }
    case ScalarType::Long: { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    case ScalarType::Int: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case ScalarType::Short: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case ScalarType::Char: return static_cast<int8_t>(*p);
    case ScalarType::Byte: case ScalarType::Bool: return *p;
  }
  return 0;
}

bool is_number(const pickle::Node& n) {
  return n.kind == Kind::Int || n.kind == Kind::Float || n.kind == Kind::Bool;
}
double number(const pickle::Node& n) { return n.kind == Kind::Float ? n.real : static_cast<double>(n.integer); }

// --- YAML emission

bool plain_scalar_ok(const std::string& s) {
  static const std::unordered_set<std::string> reserved = {
      "true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"};
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  }
  std::string lower = s;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return !reserved.count(lower);
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// The shortest decimal that reads back as the same double, and always recognisably a float.
std::string float_text(double v) {
  if (std::isnan(v)) return ".nan";
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  std::string s = shortest_decimal(v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

class YamlWriter {
 public:
  explicit YamlWriter(const pickle::Document& doc) : doc_(doc) {}

  std::string document(NodeId dict) {
    for (const auto& [k, v] : doc_.entries(dict)) {
      out_ += scalar_key(k) + ":";
      const pickle::Node& value = doc_.node(v);
      const bool block = (value.kind == Kind::List || value.kind == Kind::Tuple) && !value.items.empty();
      if (block) {
        for (NodeId item : value.items) {
          out_ += "\n  - ";
          flow(item, 1);
        }
      } else {
        out_ += " ";
        flow(v, 1);
      }
      out_ += "\n";
      check_size();
    }
    return out_;
  }

 private:
  [[noreturn]] static void fail(const std::string& what) { throw FormatError("model yaml: " + what); }
  void check_size() const {
    if (out_.size() > kMaxYamlBytes) fail("longer than 1 MiB");
  }
  std::string scalar_key(NodeId k) const {
    const pickle::Node& n = doc_.node(k);
    if (n.kind == Kind::String) return plain_scalar_ok(n.text) ? n.text : quoted(n.text);
    if (n.kind == Kind::Int) return std::to_string(n.integer);
    fail("dict key is not a string or integer");
  }
  void flow(NodeId id, int depth) {
    if (depth > kMaxYamlDepth) fail("nested deeper than " + std::to_string(kMaxYamlDepth));
    check_size();
    const pickle::Node& n = doc_.node(id);
    switch (n.kind) {
      case Kind::None: out_ += "null"; return;
      case Kind::Bool: out_ += n.integer ? "true" : "false"; return;
      case Kind::Int: out_ += std::to_string(n.integer); return;
      case Kind::Float: out_ += float_text(n.real); return;
      case Kind::String: out_ += plain_scalar_ok(n.text) ? n.text : quoted(n.text); return;
      case Kind::List: case Kind::Tuple: {
        out_ += "[";
        for (size_t i = 0; i < n.items.size(); ++i) {
          if (i) out_ += ", ";
          flow(n.items[i], depth + 1);
        }
        out_ += "]";
        return;
      }
      case Kind::Dict: {
        out_ += "{";
        bool first = true;
        for (const auto& [k, v] : doc_.entries(id)) {
          if (!first) out_ += ", ";
          first = false;
          out_ += scalar_key(k) + ": ";
          flow(v, depth + 1);
        }
        out_ += "}";
        return;
      }
      default: fail("contains a value that is not plain data");
    }
  }

  const pickle::Document& doc_;
  std::string out_;
};

}  // namespace

std::string pickle_to_yaml(const pickle::Document& doc, NodeId dict) { return YamlWriter(doc).document(dict); }

PtArchive::PtArchive(std::shared_ptr<const std::vector<uint8_t>> bytes, const std::string& label,
                     bool verify_crc)
    : zip_(std::move(bytes), label) {
  for (const ZipEntry& e : zip_.entries()) {
    const size_t slash = e.name.find('/');
    if (slash != std::string::npos && e.name.compare(slash, std::string::npos, "/data.pkl") == 0) {
      prefix_ = e.name.substr(0, slash + 1);
      break;
    }
  }
  if (prefix_.empty()) fail("no <archive>/data.pkl entry: not a PyTorch zip checkpoint");
  if (const ZipEntry* order = zip_.find(prefix_ + "byteorder")) {
    const ByteView b = zip_.read(order->name);
    if (std::string(reinterpret_cast<const char*>(b.data), b.size) != "little") {
      fail("big-endian checkpoints are not supported");
    }
  }
  const ByteView pkl = zip_.read(prefix_ + "data.pkl");
  if (verify_crc) zip_.verify_crc(*zip_.find(prefix_ + "data.pkl"));
  doc_ = pickle::parse_pickle(pkl, label);
  check_storages(verify_crc);

  const NodeId root = doc_.root();
  if (doc_.node(root).kind != Kind::Dict) fail("data.pkl does not hold a dict (not a YOLOv5 checkpoint)");
  source_ = "model";
  NodeId model = doc_.get(root, "model");
  if (model == kNoNode || doc_.node(model).kind == Kind::None) {
    source_ = "ema";
    model = doc_.get(root, "ema");
  }
  if (model == kNoNode || doc_.node(model).kind != Kind::Object) {
    fail("checkpoint has no pickled model under 'model' or 'ema'");
  }
  size_t visits = 0;
  collect_module(model, "", 0, &visits);
  if (state_.empty()) fail("the checkpoint's model has no parameters");
  read_model_attributes(doc_.object_dict(model));

  const NodeId epoch = doc_.get(root, "epoch");
  if (epoch != kNoNode && doc_.node(epoch).kind == Kind::Int) epoch_ = doc_.node(epoch).integer;
  const NodeId fitness = doc_.get(root, "best_fitness");
  if (fitness != kNoNode && is_number(doc_.node(fitness))) best_fitness_ = number(doc_.node(fitness));
}

void PtArchive::check_storages(bool verify_crc) {
  std::unordered_set<std::string> verified;  // tensors sharing a storage name it repeatedly
  for (const pickle::StorageRef& s : doc_.storages()) {
    const std::string name = prefix_ + "data/" + s.key;
    const ByteView b = zip_.read(name);
    uint64_t need = 0;
    if (__builtin_mul_overflow(s.numel, pickle::element_size(s.dtype), &need) || need > b.size) {
      fail("storage '" + name + "' holds " + std::to_string(b.size) + " bytes, fewer than its " +
           std::to_string(s.numel) + " " + pickle::scalar_name(s.dtype) + " elements need");
    }
    if (verify_crc && verified.insert(name).second) zip_.verify_crc(*zip_.find(name));
    storage_bytes_.push_back(b);
  }
}

ByteView PtArchive::storage_bytes(uint32_t storage) const {
  if (storage >= storage_bytes_.size()) fail("storage index out of range");
  return storage_bytes_[storage];
}

std::string PtArchive::string_key(NodeId key, const std::string& where) const {
  const pickle::Node& k = doc_.node(key);
  if (k.kind != Kind::String || k.text.empty() || k.text.size() > 256) {
    fail(where + " has a key that is not a short string");
  }
  return k.text;
}

void PtArchive::collect_module(NodeId module, const std::string& prefix, int depth, size_t* visits) {
  const std::string where = "module '" + (prefix.empty() ? std::string("<root>") : prefix) + "'";
  if (depth > kMaxModuleDepth) fail(where + ": modules nested deeper than 64");
  if (++*visits > kMaxModuleVisits) fail("more than 65536 modules");
  const NodeId dict = doc_.object_dict(module);
  if (dict == kNoNode) {
    fail(where + " (" + doc_.class_name(module) + ") has no pickled __dict__ (not an nn.Module)");
  }
  const NodeId params = doc_.get(dict, "_parameters");
  const NodeId buffers = doc_.get(dict, "_buffers");
  const NodeId children = doc_.get(dict, "_modules");
  for (NodeId map : {params, buffers, children}) {
    if (map == kNoNode || doc_.node(map).kind != Kind::Dict) {
      fail(where + " lacks _parameters/_buffers/_modules dicts (not an nn.Module)");
    }
  }
  // Buffers registered with persistent=False are not part of state_dict().
  std::unordered_set<std::string> transient;
  const NodeId transient_set = doc_.get(dict, "_non_persistent_buffers_set");
  if (transient_set != kNoNode && doc_.node(transient_set).kind == Kind::Object) {
    const pickle::Node& args = doc_.node(doc_.node(transient_set).args);
    if (!args.items.empty() && doc_.node(args.items[0]).kind == Kind::List) {
      for (NodeId n : doc_.node(args.items[0]).items) {
        if (doc_.node(n).kind == Kind::String) transient.insert(doc_.node(n).text);
      }
    }
  }
  for (NodeId map : {params, buffers}) {
    for (const auto& [k, v] : doc_.entries(map)) {
      const std::string name = string_key(k, where);
      const pickle::Node& value = doc_.node(v);
      if (value.kind == Kind::None || (map == buffers && transient.count(name))) continue;
      if (value.kind != Kind::Tensor) fail(where + ": '" + name + "' is not a tensor");
      state_.emplace_back(prefix + name, doc_.tensor(v));
    }
  }
  for (const auto& [k, v] : doc_.entries(children)) {
    const std::string name = string_key(k, where);
    if (doc_.node(v).kind == Kind::None) continue;
    collect_module(v, prefix + name + ".", depth + 1, visits);
  }
}

void PtArchive::read_model_attributes(NodeId model_dict) {
  const NodeId yaml = doc_.get(model_dict, "yaml");
  if (yaml != kNoNode && doc_.node(yaml).kind == Kind::Dict) model_yaml_ = pickle_to_yaml(doc_, yaml);

  const NodeId names = doc_.get(model_dict, "names");
  if (names != kNoNode) {
    const pickle::Node& n = doc_.node(names);
    std::vector<std::pair<NodeId, NodeId>> indexed;  // (index node, name node)
    if (n.kind == Kind::List || n.kind == Kind::Tuple) {
      for (NodeId item : n.items) indexed.emplace_back(kNoNode, item);
    } else if (n.kind == Kind::Dict) {
      indexed = doc_.entries(names);
    } else {
      fail("model.names is neither a list nor a dict");
    }
    for (size_t i = 0; i < indexed.size(); ++i) {
      const auto [index, name] = indexed[i];
      if (index != kNoNode && (doc_.node(index).kind != Kind::Int || doc_.node(index).integer != static_cast<int64_t>(i))) {
        fail("model.names dict keys are not 0..n-1 in order");
      }
      if (doc_.node(name).kind != Kind::String) fail("model.names holds a value that is not a string");
      names_.push_back(doc_.node(name).text);
    }
  }

  const NodeId stride = doc_.get(model_dict, "stride");
  if (stride != kNoNode && doc_.node(stride).kind == Kind::Tensor) {
    stride_ = values(doc_.tensor(stride));
  } else if (stride != kNoNode && doc_.node(stride).kind == Kind::List) {
    for (NodeId item : doc_.node(stride).items) {
      if (!is_number(doc_.node(item))) fail("model.stride holds a value that is not a number");
      stride_.push_back(number(doc_.node(item)));
    }
  }

  const NodeId nc = doc_.get(model_dict, "nc");
  const NodeId yaml_nc = doc_.get(yaml, "nc");
  if (nc != kNoNode && doc_.node(nc).kind == Kind::Int) {
    nc_ = static_cast<int>(doc_.node(nc).integer);
  } else if (yaml_nc != kNoNode && doc_.node(yaml_nc).kind == Kind::Int) {
    nc_ = static_cast<int>(doc_.node(yaml_nc).integer);
  } else {
    nc_ = static_cast<int>(names_.size());
  }
}

std::vector<double> PtArchive::values(const pickle::TensorRef& t) const {
  uint64_t numel = 1;  // cannot overflow: the parser bounded it by the storage's element count
  for (int64_t s : t.sizes) numel *= static_cast<uint64_t>(s);
  if (numel > kMaxSmallTensor) fail("tensor too large to read as values");
  const pickle::StorageRef& s = doc_.storages()[t.storage];
  const ByteView bytes = storage_bytes(t.storage);
  const size_t esize = pickle::element_size(s.dtype);
  std::vector<double> out;
  out.reserve(numel);
  std::vector<int64_t> index(t.sizes.size(), 0);
  for (uint64_t i = 0; i < numel; ++i) {
    int64_t at = t.offset;  // in range: the parser checked the tensor's extent against its storage
    for (size_t d = 0; d < index.size(); ++d) at += index[d] * t.strides[d];
    out.push_back(element_as_double(s.dtype, bytes.data + static_cast<size_t>(at) * esize));
    for (size_t d = index.size(); d-- > 0;) {  // row-major odometer
      if (++index[d] < t.sizes[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

}  // namespace kestrel
