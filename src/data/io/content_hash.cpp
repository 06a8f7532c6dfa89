// content_hash64: four lanes of multiply-rotate over 32-byte blocks, the tail folded in word by word,
// then a final avalanche so every input bit affects every output bit.
#include "data/io/content_hash.h"

#include <cstring>

namespace kestrel {
namespace {

constexpr uint64_t kMulA = 0x9e3779b97f4a7c15ull;  // 2^64 / golden ratio, odd
constexpr uint64_t kMulB = 0xd6e8feb86659fd93ull;  // odd constants with well spread bits
constexpr uint64_t kMulC = 0xc2b2ae3d27d4eb4full;

uint64_t rotl(uint64_t v, int r) { return (v << r) | (v >> (64 - r)); }

uint64_t load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);  // unaligned-safe; host order: packs are made and read on little-endian hosts
  return v;
}

uint64_t mix_word(uint64_t lane, uint64_t word) { return rotl(lane ^ (word * kMulB), 29) * kMulA; }

uint64_t avalanche(uint64_t h) {
  h ^= h >> 31;
  h *= kMulC;
  h ^= h >> 29;
  h *= kMulB;
  h ^= h >> 32;
  return h;
}

}  // namespace

uint64_t content_hash64(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  const unsigned char* const end = p + size;
  uint64_t lanes[4] = {kMulA, kMulB, kMulC, kMulA ^ kMulB};
  for (; end - p >= 32; p += 32)
    for (int i = 0; i < 4; ++i) lanes[i] = mix_word(lanes[i], load64(p + 8 * i));
  uint64_t h = static_cast<uint64_t>(size) * kMulC;
  for (int i = 0; i < 4; ++i) h = rotl(h, 17) ^ avalanche(lanes[i]);
  for (; end - p >= 8; p += 8) h = mix_word(h, load64(p));
  uint64_t last = 0;
  for (int shift = 0; p < end; ++p, shift += 8) last |= static_cast<uint64_t>(*p) << shift;
  return avalanche(mix_word(h, last ^ size));
}

}  // namespace kestrel
