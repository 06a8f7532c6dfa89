// Test helper: compares an image with a reference "pixel summary" (sha256 of the C-order bytes, channel
// sums, values on a g x g grid, optional crop) as the augment_*.json files record them.
#pragma once
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "test_support.h"

namespace kestrel::test {

// SHA-256 (FIPS 180-4) of a byte string, lowercase hex.
inline std::string sha256_hex(const uint8_t* data, size_t n) {
  static const uint32_t k[64] = {
      0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
      0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
      0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
      0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
      0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
      0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
      0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
      0xc67178f2};
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  auto rotr = [](uint32_t x, int r) { return (x >> r) | (x << (32 - r)); };
  std::vector<uint8_t> msg(data, data + n);
  msg.push_back(0x80);
  while (msg.size() % 64 != 56) msg.push_back(0);
  const uint64_t bits = static_cast<uint64_t>(n) * 8;
  for (int i = 7; i >= 0; --i) msg.push_back(static_cast<uint8_t>(bits >> (8 * i)));
  for (size_t off = 0; off < msg.size(); off += 64) {
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = uint32_t(msg[off + 4 * i]) << 24 | uint32_t(msg[off + 4 * i + 1]) << 16 |
             uint32_t(msg[off + 4 * i + 2]) << 8 | uint32_t(msg[off + 4 * i + 3]);
    for (int i = 16; i < 64; ++i) {
      const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; ++i) {
      const uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
  }
  std::string hex;
  char buf[9];
  for (uint32_t v : h) {
    std::snprintf(buf, sizeof buf, "%08x", v);
    hex += buf;
  }
  return hex;
}

inline std::string mat_sha256(const cv::Mat& m) {
  const cv::Mat c = m.isContinuous() ? m : m.clone();
  return sha256_hex(c.data, c.total() * c.elemSize());
}

// A uint8 HWC reference tensor {"shape","data"} as a Mat.
inline cv::Mat json_image(const nlohmann::json& t) {
  const auto shape = json_shape(t);
  const auto& data = t.at("data");
  const int rows = static_cast<int>(shape[0]), cols = static_cast<int>(shape[1]);
  const int channels = shape.size() > 2 ? static_cast<int>(shape[2]) : 1;
  cv::Mat m(rows, cols, CV_8UC(channels));
  for (size_t i = 0; i < data.size(); ++i) m.data[i] = data[i].get<uint8_t>();
  return m;
}

// Checks shape, sha256, channel sums, grid samples and (when present) the crop of a pixel summary.
inline void expect_pixel_summary(const cv::Mat& img, const nlohmann::json& s, const std::string& what) {
  SCOPED_TRACE(what);
  const auto shape = s.at("shape").get<std::vector<int>>();
  ASSERT_EQ(img.rows, shape[0]);
  ASSERT_EQ(img.cols, shape[1]);
  ASSERT_EQ(img.channels(), shape[2]);
  const auto sums = s.at("channel_sums").get<std::vector<int64_t>>();
  for (int c = 0; c < img.channels(); ++c) {
    int64_t sum = 0;
    for (int y = 0; y < img.rows; ++y)
      for (int x = 0; x < img.cols; ++x) sum += img.ptr<uint8_t>(y)[x * img.channels() + c];
    EXPECT_EQ(sum, sums[c]) << "channel " << c;
  }
  const auto yx = json_doubles(s.at("sample_yx"));
  const auto values = json_doubles(s.at("sample_values"));
  int mismatched = 0;
  for (size_t i = 0; i < yx.size() / 2; ++i)
    for (int c = 0; c < img.channels(); ++c)
      mismatched += img.ptr<uint8_t>(int(yx[2 * i]))[int(yx[2 * i + 1]) * img.channels() + c] != values[i * 3 + c];
  EXPECT_EQ(mismatched, 0) << "grid sample values";
  if (s.contains("crop")) {
    const auto y0x0 = s.at("crop_y0_x0").get<std::vector<int>>();
    const cv::Mat crop = json_image(s.at("crop"));
    const cv::Mat mine = img(cv::Rect(y0x0[1], y0x0[0], crop.cols, crop.rows));
    EXPECT_EQ(cv::norm(mine, crop, cv::NORM_INF), 0) << "crop";
  }
  EXPECT_EQ(mat_sha256(img), s.at("sha256").get<std::string>());
}

}  // namespace kestrel::test
