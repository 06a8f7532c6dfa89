// Test helpers that build small image files in memory: a textured picture, encoded bytes, and JPEGs with a
// hand-made EXIF orientation segment (OpenCV cannot write EXIF).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

namespace kestrel::test {

using Bytes = std::vector<unsigned char>;

inline void write_bytes(const std::string& path, const Bytes& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

inline Bytes encode(const std::string& ext, const cv::Mat& img, const std::vector<int>& params = {}) {
  Bytes out;
  EXPECT_TRUE(cv::imencode(ext, img, out, params));
  return out;
}

// A textured picture, so that any flip/rotation/scaling mistake changes pixels.
inline cv::Mat test_picture(int h, int w) {
  cv::Mat img(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      img.at<cv::Vec3b>(y, x) = cv::Vec3b(static_cast<uchar>(x * 255 / w), static_cast<uchar>(y * 255 / h),
                                          static_cast<uchar>((x * 7 + y * 13) % 256));
  cv::circle(img, {w / 4, h / 3}, std::min(h, w) / 6, {0, 0, 255}, -1);
  return img;
}

// An APP1 Exif segment holding only IFD0 with the orientation tag, in either byte order.
inline Bytes exif_segment(int orientation, bool big_endian) {
  Bytes tiff;
  auto u16 = [&](unsigned v) {
    if (big_endian)
      tiff.insert(tiff.end(), {uchar(v >> 8), uchar(v)});
    else
      tiff.insert(tiff.end(), {uchar(v), uchar(v >> 8)});
  };
  auto u32 = [&](unsigned v) {
    if (big_endian)
      u16(v >> 16), u16(v & 0xffff);
    else
      u16(v & 0xffff), u16(v >> 16);
  };
  tiff.push_back(big_endian ? 'M' : 'I');
  tiff.push_back(big_endian ? 'M' : 'I');
  u16(42), u32(8);              // magic, IFD0 offset
  u16(1);                       // one entry
  u16(0x0112), u16(3), u32(1);  // Orientation, SHORT, count 1
  u16(static_cast<unsigned>(orientation)), u16(0);
  u32(0);  // no next IFD
  const size_t len = 2 + 6 + tiff.size();
  const Bytes head = {0xFF, 0xE1, uchar(len >> 8), uchar(len), 'E', 'x', 'i', 'f', 0, 0};
  Bytes seg(head.size() + tiff.size());
  std::copy(head.begin(), head.end(), seg.begin());
  std::copy(tiff.begin(), tiff.end(), seg.begin() + static_cast<long>(head.size()));
  return seg;
}

// The JPEG with an Exif orientation segment inserted right after SOI.
inline Bytes with_exif(const Bytes& jpeg, int orientation, bool big_endian = false) {
  Bytes out(jpeg.begin(), jpeg.begin() + 2);
  const Bytes seg = exif_segment(orientation, big_endian);
  out.insert(out.end(), seg.begin(), seg.end());
  out.insert(out.end(), jpeg.begin() + 2, jpeg.end());
  return out;
}

}  // namespace kestrel::test
