// Writes the image-header fuzzer's seed corpus: tiny images of every format the header path parses
// (JPEG plain, greyscale, with EXIF orientation in both byte orders, and cut short; PNG; BMP; WebP lossy
// and lossless). Usage: make_image_seed_corpus <dir>.

#include <opencv2/imgproc.hpp>

#include "data/image_fixtures.h"
#include "seed_files.h"

int main(int argc, char** argv) {
  using namespace kestrel::test;
  const cv::Mat picture = test_picture(12, 20);
  const Bytes jpeg = encode(".jpg", picture, {cv::IMWRITE_JPEG_QUALITY, 50});
  cv::Mat grey;
  cv::cvtColor(picture, grey, cv::COLOR_BGR2GRAY);
  return kestrel::fuzz::write_seed_files(argc, argv, "make_image_seed_corpus", {
      {"plain.jpg", jpeg},
      {"exif6_le.jpg", with_exif(jpeg, 6)},
      {"exif8_be.jpg", with_exif(jpeg, 8, /*big_endian=*/true)},
      {"no_eoi.jpg", Bytes(jpeg.begin(), jpeg.end() - 2)},
      {"grey.jpg", encode(".jpg", grey, {cv::IMWRITE_JPEG_QUALITY, 50})},
      {"plain.png", encode(".png", picture)},
      {"plain.bmp", encode(".bmp", picture)},
      {"lossy.webp", encode(".webp", picture, {cv::IMWRITE_WEBP_QUALITY, 50})},
      {"lossless.webp", encode(".webp", picture, {cv::IMWRITE_WEBP_QUALITY, 101})}});
}
