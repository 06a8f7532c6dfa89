// The pickle virtual machine, restricted to data-building opcodes. Values live in one arena
// (Document::nodes_) and refer to each other by index, so shared and even cyclic references (which
// the memo allows) cost nothing to build or free.
#include "model/pickle_reader.h"

#include <cstring>
#include <unordered_map>

namespace kestrel::pickle {

size_t element_size(ScalarType t) {
  switch (t) {
    case ScalarType::Double: case ScalarType::Long: return 8;
    case ScalarType::Float: case ScalarType::Int: return 4;
    case ScalarType::Half: case ScalarType::BFloat16: case ScalarType::Short: return 2;
    case ScalarType::Char: case ScalarType::Byte: case ScalarType::Bool: return 1;
  }
  return 1;
}

const char* scalar_name(ScalarType t) {
  static const char* const names[] = {"Half", "BFloat16", "Float", "Double", "Long",
                                      "Int",  "Short",    "Char",  "Byte",   "Bool"};
  return names[static_cast<int>(t)];
}

const Node& Document::node(NodeId id) const {
  if (id >= nodes_.size()) throw FormatError("pickle: node index out of range");
  return nodes_[id];
}

const TensorRef& Document::tensor(NodeId id) const {
  const Node& n = node(id);
  if (n.kind != Kind::Tensor) throw FormatError("pickle: value is not a tensor");
  return tensors_[static_cast<size_t>(n.integer)];
}

NodeId Document::get(NodeId dict, const std::string& key) const {
  if (dict == kNoNode || node(dict).kind != Kind::Dict) return kNoNode;
  const auto& items = node(dict).items;
  for (size_t i = items.size(); i >= 2; i -= 2) {
    const Node& k = node(items[i - 2]);
    if (k.kind == Kind::String && k.text == key) return items[i - 1];
  }
  return kNoNode;
}

std::vector<std::pair<NodeId, NodeId>> Document::entries(NodeId dict) const {
  if (dict == kNoNode || node(dict).kind != Kind::Dict) throw FormatError("pickle: value is not a dict");
  const auto& items = node(dict).items;
  std::vector<std::pair<NodeId, NodeId>> out;
  std::unordered_map<std::string, size_t> position;  // "s<text>" / "i<value>" -> index in out
  for (size_t i = 0; i + 1 < items.size(); i += 2) {
    const Node& k = node(items[i]);
    std::string id;
    if (k.kind == Kind::String) id = "s" + k.text;
    if (k.kind == Kind::Int) id = "i" + std::to_string(k.integer);
    if (!id.empty()) {
      const auto [it, fresh] = position.emplace(id, out.size());
      if (!fresh) {
        out[it->second].second = items[i + 1];
        continue;
      }
    }
    out.emplace_back(items[i], items[i + 1]);
  }
  return out;
}

NodeId Document::object_dict(NodeId object) const {
  if (object == kNoNode || node(object).kind != Kind::Object) return kNoNode;
  const NodeId state = node(object).state;
  return state != kNoNode && node(state).kind == Kind::Dict ? state : kNoNode;
}

std::string Document::class_name(NodeId object) const {
  if (object == kNoNode || node(object).kind != Kind::Object) return "";
  return node(node(object).cls).text;
}

namespace {

bool storage_type_from_class(const std::string& cls, ScalarType* out) {
  static const std::pair<const char*, ScalarType> table[] = {
      {"torch.HalfStorage", ScalarType::Half},   {"torch.BFloat16Storage", ScalarType::BFloat16},
      {"torch.FloatStorage", ScalarType::Float}, {"torch.DoubleStorage", ScalarType::Double},
      {"torch.LongStorage", ScalarType::Long},   {"torch.IntStorage", ScalarType::Int},
      {"torch.ShortStorage", ScalarType::Short}, {"torch.CharStorage", ScalarType::Char},
      {"torch.ByteStorage", ScalarType::Byte},   {"torch.BoolStorage", ScalarType::Bool}};
  for (const auto& [name, type] : table) {
    if (cls == name) {
      *out = type;
      return true;
    }
  }
  return false;
}

}  // namespace

class Parser {
 public:
  Parser(ByteView bytes, const std::string& label, const Limits& limits)
      : p_(bytes.data), size_(bytes.size), label_(label), limits_(limits) {}

  Document run() {
    while (true) {
      op_pos_ = pos_;
      const uint8_t op = u8();
      if (op == '.') {  // STOP
        doc_.root_ = pop();
        return std::move(doc_);
      }
      step(op);
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError(label_ + ": pickle: " + what + " at byte " + std::to_string(op_pos_));
  }

  // --- reading the byte stream
  const uint8_t* take(uint64_t n) {
    if (n > size_ - pos_) fail("truncated data (needs " + std::to_string(n) + " more bytes)");
    const uint8_t* at = p_ + pos_;
    pos_ += static_cast<size_t>(n);
    return at;
  }
  uint8_t u8() { return *take(1); }
  uint64_t uint_le(int n) {
    const uint8_t* b = take(static_cast<uint64_t>(n));
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | b[i];
    return v;
  }
  std::string text(uint64_t n) {
    const uint8_t* b = take(n);
    return std::string(reinterpret_cast<const char*>(b), static_cast<size_t>(n));
  }
  std::string line() {  // GLOBAL's newline-terminated module / name
    const size_t start = pos_;
    while (true) {
      if (pos_ - start > 1024) fail("GLOBAL name longer than 1024 bytes");
      if (u8() == '\n') return std::string(reinterpret_cast<const char*>(p_ + start), pos_ - start - 1);
    }
  }

  // --- the value arena and the stack
  NodeId add(Node n) {
    if (doc_.nodes_.size() >= limits_.max_nodes) fail("too many values");
    doc_.nodes_.push_back(std::move(n));
    return static_cast<NodeId>(doc_.nodes_.size() - 1);
  }
  NodeId add(Kind kind) {
    Node n;
    n.kind = kind;
    return add(std::move(n));
  }
  Node& at(NodeId id) { return doc_.nodes_[id]; }
  void push(NodeId id) {
    if (stack_.size() >= limits_.max_stack) fail("stack too deep");
    stack_.push_back(id);
  }
  NodeId pop() {
    if (stack_.size() <= floor()) fail("stack underflow");
    const NodeId id = stack_.back();
    stack_.pop_back();
    return id;
  }
  NodeId& top() {
    if (stack_.size() <= floor()) fail("stack underflow");
    return stack_.back();
  }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  // Pops everything above the topmost MARK, and the MARK.
  std::vector<NodeId> pop_mark() {
    if (marks_.empty()) fail("no MARK on the stack");
    std::vector<NodeId> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  NodeId make_int(int64_t v) {
    Node n;
    n.kind = Kind::Int;
    n.integer = v;
    return add(std::move(n));
  }
  NodeId make_string(Kind kind, uint64_t len) {
    Node n;
    n.kind = kind;
    n.text = text(len);
    return add(std::move(n));
  }
  NodeId make_tuple(std::vector<NodeId> items) {
    Node n;
    n.kind = Kind::Tuple;
    n.items = std::move(items);
    return add(std::move(n));
  }
  NodeId make_global(const std::string& module, const std::string& name) {
    Node n;
    n.kind = Kind::Global;
    n.text = module + "." + name;
    return add(std::move(n));
  }
  void memo_put(uint64_t key) {
    if (memo_.size() >= limits_.max_memo && !memo_.count(key)) fail("memo too large");
    memo_[key] = top();
  }
  void memo_get(uint64_t key) {
    const auto it = memo_.find(key);
    if (it == memo_.end()) fail("memo key " + std::to_string(key) + " not defined");
    push(it->second);
  }
  void append(NodeId list, const std::vector<NodeId>& items) {
    if (at(list).kind != Kind::List) fail("APPEND to a value that is not a list");
    auto& dst = at(list).items;
    dst.insert(dst.end(), items.begin(), items.end());
  }
  void set_items(NodeId dict, const std::vector<NodeId>& kv) {
    if (at(dict).kind != Kind::Dict) fail("SETITEM on a value that is not a dict");
    if (kv.size() % 2 != 0) fail("SETITEMS with an odd number of values");
    auto& dst = at(dict).items;
    dst.insert(dst.end(), kv.begin(), kv.end());
  }

  int64_t int_of(NodeId id, const char* what) {
    const Node& n = at(id);
    if (n.kind != Kind::Int && n.kind != Kind::Bool) fail(std::string(what) + " is not an integer");
    return n.integer;
  }
  std::vector<int64_t> ints_of(NodeId id, const char* what) {
    if (at(id).kind != Kind::Tuple) fail(std::string(what) + " is not a tuple");
    const std::vector<NodeId> items = at(id).items;
    if (items.size() > limits_.max_dims) fail(std::string(what) + " has too many dimensions");
    std::vector<int64_t> out;
    for (NodeId i : items) out.push_back(int_of(i, what));
    return out;
  }

  // A persistent id: ('storage', torch.<Type>Storage, key, location, numel).
  NodeId persistent_load(NodeId pid) {
    const Node& t = at(pid);
    if (t.kind != Kind::Tuple || t.items.size() != 5 || at(t.items[0]).kind != Kind::String ||
        at(t.items[0]).text != "storage") {
      fail("unsupported persistent id (expected a ('storage', ...) tuple)");
    }
    const Node& cls = at(t.items[1]);
    const Node& key = at(t.items[2]);
    StorageRef s;
    if (cls.kind != Kind::Global || !storage_type_from_class(cls.text, &s.dtype)) {
      fail("unsupported storage type '" + cls.text + "'");
    }
    if (key.kind != Kind::String || key.text.empty() || key.text.size() > 64 ||
        key.text.find_first_of("/\\") != std::string::npos || key.text.find("..") != std::string::npos) {
      fail("invalid storage key");
    }
    s.key = key.text;
    const int64_t numel = int_of(t.items[4], "storage size");
    if (numel < 0) fail("negative storage size");
    s.numel = static_cast<uint64_t>(numel);
    Node n;
    n.kind = Kind::Storage;
    n.integer = static_cast<int64_t>(doc_.storages_.size());
    doc_.storages_.push_back(std::move(s));
    return add(std::move(n));
  }

  // torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, meta]).
  NodeId rebuild_tensor(const std::vector<NodeId>& a) {
    if (a.size() < 4) fail("_rebuild_tensor_v2 needs at least 4 arguments");
    if (at(a[0]).kind != Kind::Storage) fail("_rebuild_tensor_v2: first argument is not a storage");
    TensorRef t;
    t.storage = static_cast<uint32_t>(at(a[0]).integer);
    t.offset = int_of(a[1], "tensor offset");
    t.sizes = ints_of(a[2], "tensor size");
    t.strides = ints_of(a[3], "tensor stride");
    if (t.sizes.size() != t.strides.size()) fail("tensor size and stride ranks differ");
    // The highest element addressed must lie inside the storage; all arithmetic overflow-checked.
    if (t.offset < 0) fail("negative tensor offset");
    bool empty = false;
    int64_t last = t.offset;
    for (size_t d = 0; d < t.sizes.size(); ++d) {
      if (t.sizes[d] < 0 || t.strides[d] < 0) fail("negative tensor size or stride");
      if (t.sizes[d] == 0) empty = true;
      int64_t span = 0;
      if (t.sizes[d] > 0 && (__builtin_mul_overflow(t.sizes[d] - 1, t.strides[d], &span) ||
                             __builtin_add_overflow(last, span, &last))) {
        fail("tensor extent overflows");
      }
    }
    const StorageRef& s = doc_.storages_[t.storage];
    if (!empty && static_cast<uint64_t>(last) >= s.numel) {
      fail("tensor extends past its storage '" + s.key + "'");
    }
    // Zero strides (expanded views) could make a small storage describe an enormous tensor.
    uint64_t numel = 1;
    for (int64_t size : t.sizes) {
      if (__builtin_mul_overflow(numel, static_cast<uint64_t>(size), &numel)) numel = UINT64_MAX;
    }
    if (!empty && numel > s.numel) {
      fail("tensor has more elements than its storage '" + s.key + "' (expanded views are not supported)");
    }
    Node n;
    n.kind = Kind::Tensor;
    n.integer = static_cast<int64_t>(doc_.tensors_.size());
    doc_.tensors_.push_back(std::move(t));
    return add(std::move(n));
  }

  // REDUCE: call `callable(*args)`. Interpreted for the few constructors we know; everything else
  // becomes an inert Object that remembers what would have been called.
  NodeId reduce(NodeId callable, NodeId args) {
    if (at(callable).kind != Kind::Global) fail("REDUCE on a value that is not a class reference");
    if (at(args).kind != Kind::Tuple) fail("REDUCE arguments are not a tuple");
    const std::string name = at(callable).text;
    const std::vector<NodeId> a = at(args).items;
    if (name == "collections.OrderedDict") {
      if (!a.empty()) fail("OrderedDict with constructor arguments is not supported");
      return add(Kind::Dict);
    }
    if (name == "torch._utils._rebuild_tensor_v2") return rebuild_tensor(a);
    if (name == "torch._utils._rebuild_parameter" ||
        name == "torch._utils._rebuild_parameter_with_state") {
      if (a.empty() || at(a[0]).kind != Kind::Tensor) fail(name + ": first argument is not a tensor");
      doc_.tensors_[static_cast<size_t>(at(a[0]).integer)].parameter = true;
      return a[0];
    }
    Node n;
    n.kind = Kind::Object;
    n.cls = callable;
    n.args = args;
    return add(std::move(n));
  }

  void step(uint8_t op) {
    switch (op) {
      case 0x80: {  // PROTO
        if (u8() > 5) fail("unsupported pickle protocol");
        break;
      }
      case 0x95: take(8); break;  // FRAME: a framing hint, the opcodes follow inline
      case '(': {  // MARK
        if (marks_.size() >= limits_.max_marks) fail("MARKs nested too deeply");
        marks_.push_back(stack_.size());
        break;
      }
      case '0': pop(); break;            // POP
      case '1': pop_mark(); break;       // POP_MARK
      case '2': push(top()); break;      // DUP
      case 'N': push(add(Kind::None)); break;
      case 0x88: case 0x89: {  // NEWTRUE, NEWFALSE
        Node n;
        n.kind = Kind::Bool;
        n.integer = op == 0x88;
        push(add(std::move(n)));
        break;
      }
      case 'J': push(make_int(static_cast<int32_t>(uint_le(4)))); break;  // BININT
      case 'K': push(make_int(static_cast<int64_t>(uint_le(1)))); break;  // BININT1
      case 'M': push(make_int(static_cast<int64_t>(uint_le(2)))); break;  // BININT2
      case 0x8a: {  // LONG1: little-endian two's complement, n bytes
        const uint8_t n = u8();
        if (n > 8) fail("integer wider than 64 bits");
        uint64_t v = uint_le(n);
        if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);  // sign-extend
        push(make_int(static_cast<int64_t>(v)));
        break;
      }
      case 'G': {  // BINFLOAT: big-endian IEEE double
        const uint8_t* b = take(8);
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = (bits << 8) | b[i];
        Node n;
        n.kind = Kind::Float;
        std::memcpy(&n.real, &bits, sizeof bits);
        push(add(std::move(n)));
        break;
      }
      case 'X': push(make_string(Kind::String, uint_le(4))); break;     // BINUNICODE
      case 0x8c: push(make_string(Kind::String, uint_le(1))); break;    // SHORT_BINUNICODE
      case 0x8d: push(make_string(Kind::String, uint_le(8))); break;    // BINUNICODE8
      case 'B': push(make_string(Kind::Bytes, uint_le(4))); break;      // BINBYTES
      case 'C': push(make_string(Kind::Bytes, uint_le(1))); break;      // SHORT_BINBYTES
      case 0x8e: push(make_string(Kind::Bytes, uint_le(8))); break;     // BINBYTES8
      case ')': push(make_tuple({})); break;                             // EMPTY_TUPLE
      case 0x85: case 0x86: case 0x87: {                                 // TUPLE1..3
        std::vector<NodeId> items(static_cast<size_t>(op - 0x84));
        for (size_t i = items.size(); i-- > 0;) items[i] = pop();
        push(make_tuple(std::move(items)));
        break;
      }
      case 't': push(make_tuple(pop_mark())); break;  // TUPLE
      case ']': push(add(Kind::List)); break;          // EMPTY_LIST
      case '}': push(add(Kind::Dict)); break;          // EMPTY_DICT
      case 'l': {                                      // LIST
        Node n;
        n.kind = Kind::List;
        n.items = pop_mark();
        push(add(std::move(n)));
        break;
      }
      case 'd': {  // DICT
        std::vector<NodeId> kv = pop_mark();
        const NodeId dict = add(Kind::Dict);
        set_items(dict, kv);
        push(dict);
        break;
      }
      case 'a': {  // APPEND
        const NodeId v = pop();
        append(top(), {v});
        break;
      }
      case 'e': {  // APPENDS
        const std::vector<NodeId> items = pop_mark();
        append(top(), items);
        break;
      }
      case 's': {  // SETITEM
        const NodeId v = pop();
        const NodeId k = pop();
        set_items(top(), {k, v});
        break;
      }
      case 'u': {  // SETITEMS
        const std::vector<NodeId> kv = pop_mark();
        set_items(top(), kv);
        break;
      }
      case 'q': memo_put(uint_le(1)); break;              // BINPUT
      case 'r': memo_put(uint_le(4)); break;              // LONG_BINPUT
      case 0x94: memo_put(memo_.size()); break;           // MEMOIZE
      case 'h': memo_get(uint_le(1)); break;              // BINGET
      case 'j': memo_get(uint_le(4)); break;              // LONG_BINGET
      case 'c': {                                         // GLOBAL
        const std::string module = line();
        const std::string name = line();
        push(make_global(module, name));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        const NodeId name = pop();
        const NodeId module = pop();
        if (at(module).kind != Kind::String || at(name).kind != Kind::String) {
          fail("STACK_GLOBAL needs two strings");
        }
        push(make_global(at(module).text, at(name).text));
        break;
      }
      case 'Q': {  // BINPERSID
        const NodeId pid = pop();
        push(persistent_load(pid));
        break;
      }
      case 'R': {  // REDUCE
        const NodeId args = pop();
        const NodeId callable = pop();
        push(reduce(callable, args));
        break;
      }
      case 0x81: {  // NEWOBJ: cls.__new__(cls, *args) -- an inert Object as well
        const NodeId args = pop();
        const NodeId cls = pop();
        if (at(cls).kind != Kind::Global) fail("NEWOBJ on a value that is not a class reference");
        if (at(args).kind != Kind::Tuple) fail("NEWOBJ arguments are not a tuple");
        Node n;
        n.kind = Kind::Object;
        n.cls = cls;
        n.args = args;
        push(add(std::move(n)));
        break;
      }
      case 'b': {  // BUILD: obj.__setstate__(state), recorded, not run
        const NodeId state = pop();
        Node& obj = at(top());
        if (obj.kind == Kind::Tensor) break;  // tensor attributes (hooks, names) are not needed
        if (obj.kind != Kind::Object) fail("BUILD on a value that is not an object");
        obj.state = state;
        break;
      }
      default: {
        static const char hex[] = "0123456789abcdef";
        fail(std::string("unsupported opcode 0x") + hex[op >> 4] + hex[op & 15]);
      }
    }
  }

  const uint8_t* p_;
  size_t size_;
  size_t pos_ = 0;
  size_t op_pos_ = 0;
  const std::string& label_;
  Limits limits_;
  Document doc_;
  std::vector<NodeId> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, NodeId> memo_;
};

Document parse_pickle(ByteView bytes, const std::string& label, const Limits& limits) {
  return Parser(bytes, label, limits).run();
}

}  // namespace kestrel::pickle
