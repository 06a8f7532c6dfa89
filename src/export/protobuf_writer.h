// Protocol Buffers wire format, write side only: the field kinds an ONNX file needs (varints,
// length-delimited bytes and nested messages). A message is built by appending its
// fields in order; a nested message is a finished writer's bytes. No schema, no generated code.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace kestrel {

class ProtoWriter {
 public:
  // int32, int64, bool and enum fields (wire type 0). Negative values take ten bytes, as the
  // protobuf encoding of a sign-extended int64.
  void add_varint(int field, int64_t value);
  void add_bytes(int field, std::string_view bytes);  // string, bytes (wire type 2)
  void add_message(int field, const ProtoWriter& message) { add_bytes(field, message.bytes()); }

  const std::string& bytes() const { return out_; }

 private:
  void put_varint(uint64_t value);
  void put_tag(int field, int wire_type) { put_varint((static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire_type)); }

  std::string out_;
};

}  // namespace kestrel
