// Writes the image-header fuzzer's seed corpus: tiny images of every format the header path parses
// (JPEG plain, with EXIF orientation in both byte orders, and cut short; PNG; BMP; WebP lossy and
// lossless). Usage: make_image_seed_corpus <dir>.
#include <fstream>
#include <iostream>
#include <string>

#include "data/image_fixtures.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_image_seed_corpus <dir>\n";
    return 2;
  }
  using namespace kestrel::test;
  const cv::Mat picture = test_picture(12, 20);
  const Bytes jpeg = encode(".jpg", picture, {cv::IMWRITE_JPEG_QUALITY, 50});
  const std::pair<const char*, Bytes> seeds[] = {
      {"plain.jpg", jpeg},
      {"exif6_le.jpg", with_exif(jpeg, 6)},
      {"exif8_be.jpg", with_exif(jpeg, 8, /*big_endian=*/true)},
      {"no_eoi.jpg", Bytes(jpeg.begin(), jpeg.end() - 2)},
      {"plain.png", encode(".png", picture)},
      {"plain.bmp", encode(".bmp", picture)},
      {"lossy.webp", encode(".webp", picture, {cv::IMWRITE_WEBP_QUALITY, 50})},
      {"lossless.webp", encode(".webp", picture, {cv::IMWRITE_WEBP_QUALITY, 101})}};
  for (const auto& [name, bytes] : seeds) {
    std::ofstream out(std::string(argv[1]) + "/" + name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::cerr << "cannot write " << name << "\n";
      return 1;
    }
  }
  return 0;
}
