// Protocol Buffers wire-format encoding (https://protobuf.dev/programming-guides/encoding/).
#include "export/protobuf_writer.h"

namespace kestrel {

void ProtoWriter::put_varint(uint64_t value) {
  while (value >= 0x80) {
    out_.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out_.push_back(static_cast<char>(value));
}

void ProtoWriter::add_varint(int field, int64_t value) {
  put_tag(field, 0);
  put_varint(static_cast<uint64_t>(value));
}

void ProtoWriter::add_bytes(int field, std::string_view bytes) {
  put_tag(field, 2);
  put_varint(bytes.size());
  out_.append(bytes);
}

}  // namespace kestrel
