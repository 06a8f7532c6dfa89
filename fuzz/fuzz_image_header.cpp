// libFuzzer target for the image header path (data/image_decode.h): format sniffing, the JPEG marker walk
// and EXIF orientation parser, and the PNG/BMP/WebP header readers, on whole images held in memory (the
// form pack entries take). Formats without a header parser here (TIFF, unknown) would be fully decoded by
// OpenCV, which is not this code: those inputs only go through the sniffer and the EXIF parser.
// A result that breaks the header's promises (positive size, orientation 1..8, the sniffed format) traps.
#include <cstddef>
#include <cstdint>

#include "data/io/image_decode.h"

namespace {

void require(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kestrel;
  const int orientation = jpeg_exif_orientation(data, size);
  require(orientation >= 1 && orientation <= 8);
  const ImageFormat format = sniff_image_format(data, size);
  if (format == ImageFormat::tiff || format == ImageFormat::unknown) return 0;
  ImageHeader header;
  if (!read_image_header(data, size, &header)) return 0;
  require(header.format == format);
  require(header.width > 0 && header.height > 0);
  require(header.orientation >= 1 && header.orientation <= 8);
  require(format == ImageFormat::jpeg || (header.orientation == 1 && !header.jpeg_missing_eoi));
  if (format == ImageFormat::jpeg) require(header.orientation == orientation);
  return 0;
}
