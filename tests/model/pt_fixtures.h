// Hand-built PyTorch-style checkpoints for the .pt reader's tests and the fuzzer's seed corpus: a
// pickle opcode writer, a stored-entry ZIP writer (optionally ZIP64), and a tiny synthetic
// YOLOv5-like checkpoint (never the real weights). Torch-free.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "model/zip_reader.h"

namespace kestrel::test {

using Bytes = std::vector<uint8_t>;

// Appends pickle opcodes. Method names follow the opcodes they emit.
class PickleWriter {
 public:
  PickleWriter& op(uint8_t code) { out_.push_back(code); return *this; }
  PickleWriter& raw(const std::string& s) { out_.insert(out_.end(), s.begin(), s.end()); return *this; }
  PickleWriter& le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  PickleWriter& proto() { return op(0x80).op(2); }
  PickleWriter& mark() { return op('('); }
  PickleWriter& str(const std::string& s) { return op('X').le(s.size(), 4).raw(s); }
  PickleWriter& integer(int32_t v) { return op('J').le(static_cast<uint32_t>(v), 4); }
  PickleWriter& real(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    op('G');
    for (int i = 7; i >= 0; --i) out_.push_back(static_cast<uint8_t>(bits >> (8 * i)));
    return *this;
  }
  PickleWriter& none() { return op('N'); }
  PickleWriter& boolean(bool v) { return op(v ? 0x88 : 0x89); }
  PickleWriter& global(const std::string& module, const std::string& name) {
    return op('c').raw(module + "\n" + name + "\n");
  }
  PickleWriter& ordered_dict() { return global("collections", "OrderedDict").op(')').op('R'); }
  PickleWriter& int_tuple(const std::vector<int32_t>& v) {
    mark();
    for (int32_t x : v) integer(x);
    return op('t');
  }
  // torch._utils._rebuild_tensor_v2(pid('storage', torch.<type>, key, 'cpu', numel), ...).
  PickleWriter& tensor(const std::string& storage_type, const std::string& key, int32_t numel,
                       int32_t offset, const std::vector<int32_t>& sizes,
                       const std::vector<int32_t>& strides) {
    global("torch._utils", "_rebuild_tensor_v2").mark();
    mark().str("storage").global("torch", storage_type).str(key).str("cpu").integer(numel).op('t');
    op('Q').integer(offset).int_tuple(sizes).int_tuple(strides).boolean(false).ordered_dict();
    return op('t').op('R');
  }
  PickleWriter& parameter_begin() { return global("torch._utils", "_rebuild_parameter").mark(); }
  PickleWriter& parameter_end() { return boolean(true).ordered_dict().op('t').op('R'); }
  // An nn.Module: NEWOBJ then BUILD with {'training': False, '_parameters': ..., ...}; the caller
  // writes the key/value pairs of the three maps between the *_begin / module_end calls.
  PickleWriter& module_begin(const std::string& module, const std::string& cls) {
    global(module, cls).op(')').op(0x81).op('}').mark().str("training").boolean(false);
    return str("_parameters").ordered_dict().mark();
  }
  PickleWriter& module_buffers() { return op('u').str("_buffers").ordered_dict().mark(); }
  PickleWriter& module_children() { return op('u').str("_modules").ordered_dict().mark(); }
  PickleWriter& module_attributes() { return op('u'); }  // then plain key/value pairs
  PickleWriter& module_end() { return op('u').op('b'); }
  Bytes bytes() const { return out_; }

 private:
  Bytes out_;
};

struct ZipFile {
  std::string name;
  Bytes data;
  uint16_t method = 0;  // recorded as is; the data is never actually compressed
};

// A ZIP of stored entries; zip64 writes ZIP64 extra fields, record and locator.
inline Bytes make_zip(const std::vector<ZipFile>& files, bool zip64 = false) {
  Bytes out, central;
  auto put = [](Bytes& b, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  const uint32_t saturated = 0xFFFFFFFFu;
  for (const ZipFile& f : files) {
    const uint64_t offset = out.size();
    const uint32_t crc = crc32_of(f.data.data(), f.data.size());
    put(out, 0x04034b50, 4); put(out, 20, 2); put(out, 0, 2); put(out, f.method, 2);
    put(out, 0, 4); put(out, crc, 4); put(out, f.data.size(), 4); put(out, f.data.size(), 4);
    put(out, f.name.size(), 2); put(out, 0, 2);
    out.insert(out.end(), f.name.begin(), f.name.end());
    out.insert(out.end(), f.data.begin(), f.data.end());

    put(central, 0x02014b50, 4); put(central, 45, 2); put(central, 45, 2); put(central, 0, 2);
    put(central, f.method, 2); put(central, 0, 4); put(central, crc, 4);
    put(central, zip64 ? saturated : f.data.size(), 4);
    put(central, zip64 ? saturated : f.data.size(), 4);
    put(central, f.name.size(), 2); put(central, zip64 ? 28 : 0, 2); put(central, 0, 2);
    put(central, 0, 2); put(central, 0, 2); put(central, 0, 4);
    put(central, zip64 ? saturated : offset, 4);
    central.insert(central.end(), f.name.begin(), f.name.end());
    if (zip64) {
      put(central, 0x0001, 2); put(central, 24, 2);
      put(central, f.data.size(), 8); put(central, f.data.size(), 8); put(central, offset, 8);
    }
  }
  const uint64_t cd_offset = out.size();
  out.insert(out.end(), central.begin(), central.end());
  if (zip64) {
    const uint64_t record = out.size();
    put(out, 0x06064b50, 4); put(out, 44, 8); put(out, 45, 2); put(out, 45, 2);
    put(out, 0, 4); put(out, 0, 4); put(out, files.size(), 8); put(out, files.size(), 8);
    put(out, central.size(), 8); put(out, cd_offset, 8);
    put(out, 0x07064b50, 4); put(out, 0, 4); put(out, record, 8); put(out, 1, 4);
  }
  put(out, 0x06054b50, 4); put(out, 0, 2); put(out, 0, 2);
  put(out, zip64 ? 0xFFFF : files.size(), 2); put(out, zip64 ? 0xFFFF : files.size(), 2);
  put(out, zip64 ? saturated : central.size(), 4); put(out, zip64 ? saturated : cd_offset, 4);
  put(out, 0, 2);
  return out;
}

// fp16 bit patterns of 1..6, stored as the tiny model's 2x3 weight.
inline Bytes tiny_half_storage() {
  const uint16_t halves[] = {0x3C00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600};
  Bytes b(sizeof halves);
  std::memcpy(b.data(), halves, sizeof halves);
  return b;
}

// data.pkl of a tiny YOLOv5-like checkpoint: Model > Sequential 'model' > Conv2d '0' with a
// parameter 'weight' (fp16 2x3 = 1..6), a None 'bias', buffers 'idx' (int64 [7, -3]) and 'wt'
// (the weight's storage seen transposed), plus names {0: cat, 1: dog}, nc 2, stride [8.0, 16.0]
// and a yaml dict. `model_is_none` pickles the model under 'ema' instead.
inline Bytes tiny_checkpoint_pickle(bool model_is_none = false) {
  PickleWriter p;
  p.proto().op('}').mark().str("epoch").integer(7).str("best_fitness").real(0.25);
  auto model = [&p] {
    p.module_begin("models.yolo", "Model").module_buffers().module_children();
    p.str("model").module_begin("torch.nn.modules.container", "Sequential").module_buffers();
    p.module_children().str("0").module_begin("torch.nn.modules.conv", "Conv2d");
    p.str("weight").parameter_begin().tensor("HalfStorage", "0", 6, 0, {2, 3}, {3, 1}).parameter_end();
    p.str("bias").none().module_buffers();
    p.str("idx").tensor("LongStorage", "1", 2, 0, {2}, {1});
    p.str("wt").tensor("HalfStorage", "0", 6, 0, {3, 2}, {1, 3});
    p.module_children().module_attributes().module_end();  // Conv2d
    p.module_attributes().module_end();                     // Sequential
    p.module_attributes().str("nc").integer(2);
    p.str("names").op('}').mark().integer(0).str("cat").integer(1).str("dog").op('u');
    p.str("stride").op(']').mark().real(8.0).real(16.0).op('e');
    p.str("yaml").op('}').mark().str("nc").integer(2).str("depth_multiple").real(0.33);
    p.str("backbone").op(']').mark();
    p.op(']').mark().integer(-1).integer(1).str("Conv").op(']').mark().integer(2).integer(3);
    p.op('e').op('e').op('e');  // args, row, backbone
    p.str("head").op(']').mark().op(']').mark().integer(-1).integer(1).str("nn.Upsample");
    p.op(']').mark().str("None").integer(2).str("nearest").op('e').op('e').op('e');
    p.op('u');  // yaml
    p.module_end();  // Model
  };
  p.str("model");
  if (model_is_none) p.none(); else model();
  p.str("ema");
  if (model_is_none) model(); else p.none();
  p.str("optimizer").none().op('u').op('.');
  return p.bytes();
}

inline Bytes tiny_long_storage() {
  const int64_t longs[] = {7, -3};
  Bytes b(sizeof longs);
  std::memcpy(b.data(), longs, sizeof longs);
  return b;
}

inline Bytes tiny_checkpoint(bool model_is_none = false, bool zip64 = false) {
  return make_zip({{"tiny/data.pkl", tiny_checkpoint_pickle(model_is_none)},
                   {"tiny/data/0", tiny_half_storage()},
                   {"tiny/data/1", tiny_long_storage()},
                   {"tiny/version", {'3', '\n'}}},
                  zip64);
}

}  // namespace kestrel::test
