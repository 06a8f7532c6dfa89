// Image decoding for the data pipeline: any supported file to 8-bit BGR, EXIF orientation applied.
// JPEG goes through TurboJPEG (one handle per thread, optional decode-time downscaling; libjpeg-turbo's
// own API when only a region is needed); PNG, BMP, WebP, TIFF and PFM go through OpenCV's imdecode with
// IMREAD_COLOR, which is exactly what YOLOv5's cv2.imread gives (grayscale replicated, alpha dropped,
// 16-bit reduced to 8-bit); any other content is an error, never handed to OpenCV's other codecs. The format is chosen by the
// file's magic bytes, never by its extension. Paths may name files inside a pack ("<pack>::<relative
// path>"): every read goes through read_file_bytes (dataset_files.h).
#pragma once
#include <opencv2/core.hpp>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace kestrel {

struct ImageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};  // message names the file

enum class ImageFormat { unknown, jpeg, png, bmp, webp, tiff };

// What a header read learns about an image without decoding its pixels.
struct ImageHeader {
  ImageFormat format = ImageFormat::unknown;
  int width = 0, height = 0;  // after EXIF orientation (5..8 swap the sides)
  int orientation = 1;        // EXIF orientation tag, 1 when absent
  bool jpeg_missing_eoi = false;  // a JPEG whose last two bytes are not FFD9 (YOLOv5's "corrupt JPEG")
};

// The part of a decoded image its caller will read, known before decoding (a mosaic tile seen only in
// part). Pixels outside `rect` may then be left undefined; an empty rect decodes no pixels at all. It is
// honoured only for a JPEG without EXIF rotation whose decoded size is `frame`, so the rectangle means
// what the caller meant; any other image is decoded whole. The pixels inside are the same bytes a whole
// decode gives: libjpeg-turbo skips the rows above (entropy-decoding them only), stops after the rows
// below, and works only on the columns around the rectangle, with a margin for its upsampling context.
struct DecodeRegion {
  cv::Rect rect;
  cv::Size frame;
};

// Decodes any image to 8-bit 3-channel BGR HWC, EXIF orientation applied, grayscale/RGBA/16-bit converted.
// With min_long_side > 0 a JPEG may be downscaled at decode time by the smallest of TurboJPEG's factors
// (1/2, 1/4, 1/8) whose long side stays >= min_long_side. Throws ImageError on zero-byte, corrupt or
// unreadable files. A JPEG that is cut short but still yields a picture decodes as libjpeg (and so
// cv2.imread) does, the missing rows filled; that is reported through `warning` (left empty when clean).
cv::Mat decode_image(const std::string& path, int min_long_side = 0);
cv::Mat decode_image(const std::string& path, int min_long_side, std::string* warning);
// The same into a caller-owned Mat (reused when it already has the right size and type).
// full_w/full_h (optional) get the image size at full scale, after orientation.
void decode_image_into(const std::string& path, int min_long_side, cv::Mat& out, int* full_w = nullptr,
                       int* full_h = nullptr, std::string* warning = nullptr, const DecodeRegion* region = nullptr);
// The same from bytes in memory (a file already read, a pack entry); `name` is only used in messages.
void decode_image_bytes(const unsigned char* data, size_t size, const std::string& name, int min_long_side,
                        cv::Mat& out, int* full_w = nullptr, int* full_h = nullptr, std::string* warning = nullptr,
                        const DecodeRegion* region = nullptr);

// How a family's load_image fits the long side to img_size (r = img_size / max(h0, w0), nothing when
// r == 1), for training (augmenting) or validation. YOLOv5: (int(w0*r), int(h0*r)), INTER_LINEAR when
// augmenting or enlarging, else INTER_AREA. Ultralytics: (min(ceil(w0*r), img_size), min(ceil(h0*r),
// img_size)), INTER_LINEAR always. Validation decodes every image at full size (the pixels the
// reference tools score); training may let a JPEG decode straight to a smaller scale.
enum class ResizeRule : uint32_t { yolov5_val = 0, yolov5_train = 1, ultralytics_val = 2, ultralytics_train = 3 };
ResizeRule resize_rule(bool ultralytics, bool augment);
const char* resize_rule_name(ResizeRule rule);  // "area", "linear", "uval", "utrain": the disk cache's file names
// The size (width, height) an image of w0 x h0 gets.
cv::Size resized_size(int w0, int h0, int img_size, ResizeRule rule = ResizeRule::yolov5_val);
// Whether the resize by r (new / old) is INTER_LINEAR; INTER_AREA otherwise.
bool resizes_linearly(ResizeRule rule, double r);

// load_image: the image resized by `rule`. Returns BGR; orig_h/orig_w get h0/w0 (after EXIF).
// decode_scaling lets a JPEG of a training rule be decoded straight to >= img_size first (fast; pixels
// differ slightly from a full-size decode followed by the resize); pass false for exact pixels. `needed` (in the returned
// image's pixels) lets the decode skip what the caller will not read; it is ignored when a resize follows.
cv::Mat load_image_resized(const std::string& path, int img_size, ResizeRule rule, int* orig_h, int* orig_w,
                           bool decode_scaling = true, const DecodeRegion* needed = nullptr);

// Reads only the header (and EXIF): size after orientation. False if unreadable.
bool read_image_size(const std::string& path, int* width, int* height);
// Header, EXIF orientation and the JPEG end-marker check. False if the file is missing, empty, or its
// header is unreadable. Formats without a cheap header parser (TIFF, PFM...) are fully decoded.
bool read_image_header(const std::string& path, ImageHeader* header);
// The same for a whole image held in memory.
bool read_image_header(const unsigned char* data, size_t size, ImageHeader* header);

// Format from the first bytes of a file (magic numbers).
ImageFormat sniff_image_format(const unsigned char* data, size_t size);
// The EXIF orientation tag (1..8) of an in-memory JPEG, 1 when absent or unparsable.
int jpeg_exif_orientation(const unsigned char* data, size_t size);
// Rotates/flips a decoded image from its stored layout to the EXIF orientation's upright layout,
// as OpenCV's imread does.
void apply_exif_orientation(cv::Mat& img, int orientation);

}  // namespace kestrel
