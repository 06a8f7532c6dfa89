// libFuzzer target for region decoding (DecodeRegion, data/image_decode.h): the input's last 4 bytes pick
// a rectangle, the rest is the file. The file is decoded whole (TurboJPEG) and over the rectangle
// (libjpeg-turbo's skip/crop, whose errors longjmp out of the decoder). Neither may crash, leak or hang;
// when the whole decode is clean (no error, no warning) the region decode must be too, with the same
// bytes inside the rectangle.
#include <cstddef>
#include <cstdint>
#include <opencv2/core.hpp>
#include <string>

#include "data/io/image_decode.h"

namespace {

void require(bool ok) {
  if (!ok) __builtin_trap();
}

// Decodes, reporting failure instead of throwing; `warning` gets libjpeg's first warning.
bool decode(const uint8_t* data, size_t size, const kestrel::DecodeRegion* region, cv::Mat& out, std::string& warning) {
  try {
    kestrel::decode_image_bytes(data, size, "fuzz.jpg", 0, out, nullptr, nullptr, &warning, region);
    return true;
  } catch (const kestrel::ImageError&) {
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kestrel;
  if (size < 5) return 0;
  const uint8_t* pick = data + size - 4;
  size -= 4;
  ImageHeader header;
  if (sniff_image_format(data, size) != ImageFormat::jpeg || !read_image_header(data, size, &header)) return 0;
  if (static_cast<size_t>(header.width) * header.height > (size_t{1} << 22)) return 0;  // bounded memory
  const int w = header.width, h = header.height;
  const int x0 = pick[0] * w / 256, y0 = pick[1] * h / 256;
  const cv::Rect rect(x0, y0, 1 + pick[2] * (w - x0 - 1) / 255, 1 + pick[3] * (h - y0 - 1) / 255);
  const DecodeRegion region{rect, cv::Size(w, h)};

  cv::Mat whole, part;
  std::string whole_warning, part_warning;
  const bool whole_ok = decode(data, size, nullptr, whole, whole_warning);
  const bool part_ok = decode(data, size, &region, part, part_warning);
  if (!whole_ok || !whole_warning.empty()) return 0;
  require(part_ok && part_warning.empty());
  require(part.size() == whole.size());
  if (header.orientation == 1) require(cv::norm(part(rect), whole(rect), cv::NORM_INF) == 0);
  return 0;
}
