// Image decoding: TurboJPEG for JPEG (with decode-time scaling and our own EXIF orientation parser),
// libjpeg-turbo's skip/crop for region decodes, OpenCV imdecode for YOLOv5's other formats, and cheap
// header readers for the dataset index.
#include "data/io/image_decode.h"

#include <turbojpeg.h>

#include <algorithm>
#include <cctype>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "data/io/dataset_files.h"
#include "data/loader/stage_timer.h"

#include <jpeglib.h>  // after <cstdio>: it needs FILE

namespace kestrel {
namespace {

struct TurboDecompressor {
  tjhandle handle = tjInitDecompress();
  ~TurboDecompressor() {
    if (handle) tjDestroy(handle);
  }
};

tjhandle turbo_handle() {
  thread_local TurboDecompressor decompressor;
  if (!decompressor.handle) throw ImageError(std::string("tjInitDecompress failed: ") + tjGetErrorStr2(nullptr));
  return decompressor.handle;
}

unsigned be16(const unsigned char* p) { return (unsigned(p[0]) << 8) | p[1]; }
unsigned be32(const unsigned char* p) { return (be16(p) << 16) | be16(p + 2); }
unsigned le16(const unsigned char* p) { return (unsigned(p[1]) << 8) | p[0]; }
unsigned le24(const unsigned char* p) { return (unsigned(p[2]) << 16) | le16(p); }
unsigned le32(const unsigned char* p) { return (unsigned(p[3]) << 24) | le24(p); }

// Orientation tag (0x0112) of IFD0 in a TIFF-structured EXIF block; 1 when absent or malformed.
int tiff_orientation(const unsigned char* t, size_t n) {
  if (n < 8) return 1;
  const bool little = t[0] == 'I' && t[1] == 'I';
  if (!little && !(t[0] == 'M' && t[1] == 'M')) return 1;
  auto u16 = [&](size_t off) { return little ? le16(t + off) : be16(t + off); };
  auto u32 = [&](size_t off) { return little ? le32(t + off) : be32(t + off); };
  if (u16(2) != 42) return 1;
  const size_t ifd = u32(4);
  if (ifd > n - 2) return 1;
  const size_t count = u16(ifd);
  for (size_t i = 0; i < count; ++i) {
    const size_t entry = ifd + 2 + 12 * i;
    if (entry + 12 > n) break;  // (n - 12 would wrap for a block shorter than one entry)
    if (u16(entry) != 0x0112) continue;
    const unsigned type = u16(entry + 2);
    const unsigned value = type == 3 ? u16(entry + 8) : type == 4 ? u32(entry + 8) : 0;  // SHORT or LONG
    return value >= 1 && value <= 8 ? static_cast<int>(value) : 1;
  }
  return 1;
}

// What walking a JPEG's marker segments up to the first scan found.
struct JpegMarkers {
  bool complete = false;  // reached SOS with every segment inside the buffer
  int width = 0, height = 0;
  int orientation = 1;
};

JpegMarkers walk_jpeg_markers(const unsigned char* d, size_t n) {
  JpegMarkers m;
  bool have_exif = false;
  size_t pos = 2;  // after SOI
  while (pos + 4 <= n) {
    if (d[pos] != 0xFF) return m;  // not a marker: malformed header
    const unsigned marker = d[pos + 1];
    if (marker == 0xFF) {  // fill byte
      ++pos;
      continue;
    }
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) {  // markers without a length
      pos += 2;
      continue;
    }
    if (marker == 0xD9) return m;  // EOI before any scan
    const size_t len = be16(d + pos + 2);
    if (len < 2) return m;
    if (marker == 0xDA) {
      m.complete = m.width > 0 && m.height > 0;
      return m;
    }
    if (pos + 2 + len > n) return m;  // segment runs past the buffer
    const unsigned char* seg = d + pos + 4;
    const size_t seg_len = len - 2;
    if (marker == 0xE1 && !have_exif && seg_len >= 6 && std::memcmp(seg, "Exif\0\0", 6) == 0) {
      have_exif = true;
      m.orientation = tiff_orientation(seg + 6, seg_len - 6);
    }
    const bool sof = marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (sof && seg_len >= 5) {
      m.height = static_cast<int>(be16(seg + 1));
      m.width = static_cast<int>(be16(seg + 3));
    }
    pos += 2 + len;
  }
  return m;
}

bool swaps_sides(int orientation) { return orientation >= 5 && orientation <= 8; }

// Decode-time scale (num/denom) for a JPEG of w x h: the strongest of 1/8, 1/4, 1/2 whose long side stays
// >= min_long_side, else 1/1.
tjscalingfactor choose_scale(int w, int h, int min_long_side) {
  const tjscalingfactor full{1, 1};
  if (min_long_side <= 0) return full;
  int count = 0;
  const tjscalingfactor* supported = tjGetScalingFactors(&count);
  for (int denom : {8, 4, 2}) {
    const tjscalingfactor sf{1, denom};
    bool available = false;
    for (int i = 0; i < count; ++i) available |= supported[i].num == 1 && supported[i].denom == denom;
    if (available && std::max(TJSCALED(w, sf), TJSCALED(h, sf)) >= min_long_side) return sf;
  }
  return full;
}

// PFM (portable float map, in YOLOv5's image formats) starts "PF" or "Pf" and a whitespace.
bool looks_like_pfm(const unsigned char* d, size_t n) {
  return n >= 3 && d[0] == 'P' && (d[1] == 'F' || d[1] == 'f') && std::isspace(d[2]);
}

// OpenCV for everything TurboJPEG does not take. Only formats YOLOv5 accepts get there: imdecode tries
// every codec it was built with, and some abort the process on malformed input (GDCM asserts on a cut
// DICOM file) instead of failing, so a stray file in a dataset would kill the run.
void decode_with_opencv(const std::string& path, const unsigned char* data, size_t size, cv::Mat& out) {
  if (sniff_image_format(data, size) == ImageFormat::unknown && !looks_like_pfm(data, size))
    throw ImageError("cannot decode image " + path + ": not a JPEG, PNG, BMP, WebP, TIFF or PFM file");
  const cv::Mat encoded(1, static_cast<int>(size), CV_8UC1, const_cast<unsigned char*>(data));
  cv::Mat decoded;
  try {
    decoded = cv::imdecode(encoded, cv::IMREAD_COLOR);
  } catch (const cv::Exception& e) {
    throw ImageError("cannot decode image " + path + ": " + e.what());
  }
  if (decoded.empty()) throw ImageError("cannot decode image " + path + " (corrupt or unsupported format)");
  out = decoded;
}

// libjpeg's error manager, turned from exit() into a longjmp back to the decode call.
struct JpegErrors {
  jpeg_error_mgr base;
  std::jmp_buf jump;
  char error[JMSG_LENGTH_MAX];
  char warning[JMSG_LENGTH_MAX];  // the first warning (a truncated file, extraneous bytes...)
};

void jpeg_on_error(j_common_ptr cinfo) {
  JpegErrors* e = reinterpret_cast<JpegErrors*>(cinfo->err);
  cinfo->err->format_message(cinfo, e->error);
  std::longjmp(e->jump, 1);
}

void jpeg_on_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  JpegErrors* e = reinterpret_cast<JpegErrors*>(cinfo->err);
  if (!e->warning[0]) cinfo->err->format_message(cinfo, e->warning);
  ++cinfo->err->num_warnings;
}

// Rows [r.y, r.y + r.height) and at least columns [r.x, r.x + r.width) of a JPEG decoded at 1/denom into
// `out` (already sized; 1 byte a pixel when `grey`, else BGR), other pixels untouched. No C++ object lives
// here: libjpeg's errors longjmp out. False (with e->error) on a fatal error.
bool decode_jpeg_rows(const unsigned char* data, size_t size, int denom, cv::Rect r, bool grey, uint8_t* out, size_t step,
                      JpegErrors* e) {
  jpeg_decompress_struct cinfo;
  cinfo.err = jpeg_std_error(&e->base);
  e->base.error_exit = jpeg_on_error;
  e->base.emit_message = jpeg_on_message;
  e->error[0] = e->warning[0] = 0;
  if (setjmp(e->jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  // TurboJPEG's TJPF_BGR or TJPF_GRAY; its other defaults (ISLOW DCT, fancy upsampling) are libjpeg's
  cinfo.out_color_space = grey ? JCS_GRAYSCALE : JCS_EXT_BGR;
  cinfo.scale_num = 1;
  cinfo.scale_denom = static_cast<unsigned>(denom);
  jpeg_start_decompress(&cinfo);
  JDIMENSION x = static_cast<JDIMENSION>(r.x), width = static_cast<JDIMENSION>(r.width);
  jpeg_crop_scanline(&cinfo, &x, &width);  // widened to whole iMCUs
  if (r.y > 0) jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(r.y));
  while (cinfo.output_scanline < static_cast<JDIMENSION>(r.y + r.height)) {
    JSAMPROW row = out + cinfo.output_scanline * step + (grey ? 1 : 3) * x;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_abort_decompress(&cinfo);  // the rows below are never decoded
  jpeg_destroy_decompress(&cinfo);
  return true;
}

// Decodes an in-memory JPEG with TurboJPEG. Returns false when TurboJPEG cannot produce BGR for it
// (e.g. CMYK), so the caller falls back to OpenCV.
bool decode_jpeg(const std::string& path, const unsigned char* data, size_t size, int min_long_side, cv::Mat& out,
                 int* full_w, int* full_h, std::string* warning, const DecodeRegion* region) {
  tjhandle tj = turbo_handle();
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(tj, data, static_cast<unsigned long>(size), &w, &h, &subsamp, &colorspace) != 0)
    throw ImageError("corrupt JPEG header in " + path + ": " + tjGetErrorStr2(tj));
  if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) return false;
  const tjscalingfactor sf = choose_scale(w, h, min_long_side);
  const int sw = TJSCALED(w, sf), sh = TJSCALED(h, sf);
  const int orientation = jpeg_exif_orientation(data, size);
  out.create(sh, sw, CV_8UC3);
  // A greyscale JPEG decodes to one channel and is spread to BGR after (the same bytes libjpeg's own
  // grey-to-BGR gives): on DeepPCB's 640 px greyscale JPEGs 0.53 ms instead of 0.62 here.
  const bool grey = colorspace == TJCS_GRAY;
  thread_local cv::Mat grey_buffer;
  if (grey) grey_buffer.create(sh, sw, CV_8UC1);
  cv::Mat& target = grey ? grey_buffer : out;
  cv::Rect decoded(0, 0, sw, sh);
  if (region && orientation == 1 && region->frame == out.size()) {
    // Widened by two iMCUs (at most 32 px) so the upsampling context at the cut matches a whole decode.
    constexpr int kMargin = 32;
    const cv::Rect want = region->rect & decoded;
    decoded = want.empty() ? cv::Rect() : cv::Rect(want.x - kMargin, want.y - kMargin, want.width + 2 * kMargin,
                                                   want.height + 2 * kMargin) & cv::Rect(0, 0, sw, sh);
    JpegErrors errors{};
    if (!decoded.empty() && !decode_jpeg_rows(data, size, sf.denom, decoded, grey, target.data, target.step[0], &errors))
      throw ImageError("corrupt JPEG " + path + ": " + errors.error);
    if (warning && errors.warning[0]) *warning = path + ": " + errors.warning;
  } else if (tjDecompress2(tj, data, static_cast<unsigned long>(size), target.data, sw, static_cast<int>(target.step[0]), sh,
                           grey ? TJPF_GRAY : TJPF_BGR, 0) != 0) {
    if (tjGetErrorCode(tj) != TJERR_WARNING)
      throw ImageError("corrupt JPEG " + path + ": " + tjGetErrorStr2(tj));
    if (warning) *warning = path + ": " + tjGetErrorStr2(tj);
  }
  if (grey && !decoded.empty()) {
    cv::Mat bgr = out(decoded);
    cv::cvtColor(grey_buffer(decoded), bgr, cv::COLOR_GRAY2BGR);
  }
  apply_exif_orientation(out, orientation);
  const bool swap = swaps_sides(orientation);
  if (full_w) *full_w = swap ? h : w;
  if (full_h) *full_h = swap ? w : h;
  return true;
}

enum class HeaderParse { ok, unreadable, need_whole };

// Format, size and orientation from the first n bytes of an image (all of it when `whole`). need_whole
// when the header continues past n (a JPEG's segments) or the format has no cheap parser (TIFF, PFM...:
// decoded to learn the size).
HeaderParse parse_header_fields(const unsigned char* buf, size_t n, bool whole, ImageHeader* out) {
  ImageHeader h;
  h.format = sniff_image_format(buf, n);
  switch (h.format) {
    case ImageFormat::jpeg: {
      const JpegMarkers m = walk_jpeg_markers(buf, n);
      if (!m.complete) return whole ? HeaderParse::unreadable : HeaderParse::need_whole;
      h.orientation = m.orientation;
      h.width = swaps_sides(m.orientation) ? m.height : m.width;
      h.height = swaps_sides(m.orientation) ? m.width : m.height;
      break;
    }
    case ImageFormat::png:
      if (n < 24 || std::memcmp(buf + 12, "IHDR", 4) != 0) return HeaderParse::unreadable;
      h.width = static_cast<int>(be32(buf + 16));
      h.height = static_cast<int>(be32(buf + 20));
      break;
    case ImageFormat::bmp: {
      if (n < 26) return HeaderParse::unreadable;
      if (le32(buf + 14) == 12) {  // BITMAPCOREHEADER
        h.width = static_cast<int>(le16(buf + 18));
        h.height = static_cast<int>(le16(buf + 20));
      } else {
        h.width = static_cast<int>(static_cast<int32_t>(le32(buf + 18)));
        h.height = std::abs(static_cast<int>(static_cast<int32_t>(le32(buf + 22))));  // negative: top-down
      }
      break;
    }
    case ImageFormat::webp:
      if (n >= 30 && std::memcmp(buf + 12, "VP8 ", 4) == 0 && be16(buf + 23) == 0x9d01 && buf[25] == 0x2a) {
        h.width = static_cast<int>(le16(buf + 26) & 0x3fff);
        h.height = static_cast<int>(le16(buf + 28) & 0x3fff);
      } else if (n >= 25 && std::memcmp(buf + 12, "VP8L", 4) == 0 && buf[20] == 0x2f) {
        const unsigned bits = le32(buf + 21);
        h.width = static_cast<int>((bits & 0x3fff) + 1);
        h.height = static_cast<int>(((bits >> 14) & 0x3fff) + 1);
      } else if (n >= 30 && std::memcmp(buf + 12, "VP8X", 4) == 0) {
        h.width = static_cast<int>(le24(buf + 24) + 1);
        h.height = static_cast<int>(le24(buf + 27) + 1);
      } else {
        return HeaderParse::unreadable;
      }
      break;
    case ImageFormat::tiff:
    case ImageFormat::unknown: {
      if (!whole) return HeaderParse::need_whole;
      try {
        cv::Mat img;
        decode_image_bytes(buf, n, "(header)", 0, img);
        h.width = img.cols;
        h.height = img.rows;
      } catch (const ImageError&) {
        return HeaderParse::unreadable;
      }
      break;
    }
  }
  if (h.width <= 0 || h.height <= 0) return HeaderParse::unreadable;
  *out = h;
  return HeaderParse::ok;
}

}  // namespace

ImageFormat sniff_image_format(const unsigned char* d, size_t n) {
  if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return ImageFormat::jpeg;
  if (n >= 8 && std::memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0) return ImageFormat::png;
  if (n >= 2 && d[0] == 'B' && d[1] == 'M') return ImageFormat::bmp;
  if (n >= 12 && std::memcmp(d, "RIFF", 4) == 0 && std::memcmp(d + 8, "WEBP", 4) == 0) return ImageFormat::webp;
  if (n >= 4 && (std::memcmp(d, "II*\0", 4) == 0 || std::memcmp(d, "MM\0*", 4) == 0)) return ImageFormat::tiff;
  return ImageFormat::unknown;
}

int jpeg_exif_orientation(const unsigned char* data, size_t size) {
  if (sniff_image_format(data, size) != ImageFormat::jpeg) return 1;
  return walk_jpeg_markers(data, size).orientation;
}

void apply_exif_orientation(cv::Mat& img, int orientation) {
  switch (orientation) {
    case 2: cv::flip(img, img, 1); break;
    case 3: cv::flip(img, img, -1); break;
    case 4: cv::flip(img, img, 0); break;
    case 5: cv::transpose(img, img); break;
    case 6: cv::rotate(img, img, cv::ROTATE_90_CLOCKWISE); break;
    case 7: cv::transpose(img, img), cv::flip(img, img, -1); break;
    case 8: cv::rotate(img, img, cv::ROTATE_90_COUNTERCLOCKWISE); break;
    default: break;
  }
}

void decode_image_bytes(const unsigned char* data, size_t size, const std::string& name, int min_long_side,
                        cv::Mat& out, int* full_w, int* full_h, std::string* warning, const DecodeRegion* region) {
  if (warning) warning->clear();
  if (size == 0) throw ImageError("empty image file " + name);
  if (sniff_image_format(data, size) == ImageFormat::jpeg &&
      decode_jpeg(name, data, size, min_long_side, out, full_w, full_h, warning, region))
    return;
  decode_with_opencv(name, data, size, out);
  if (full_w) *full_w = out.cols;
  if (full_h) *full_h = out.rows;
}

void decode_image_into(const std::string& path, int min_long_side, cv::Mat& out, int* full_w, int* full_h,
                       std::string* warning, const DecodeRegion* region) {
  FileBytes bytes;
  std::string error;
  {
    ScopedStage timer(Stage::read);
    if (!read_file_bytes(path, &bytes, &error)) throw ImageError(error);
  }
  ScopedStage timer(Stage::decode);
  decode_image_bytes(bytes.data(), bytes.size(), path, min_long_side, out, full_w, full_h, warning, region);
}

cv::Mat decode_image(const std::string& path, int min_long_side, std::string* warning) {
  cv::Mat out;
  decode_image_into(path, min_long_side, out, nullptr, nullptr, warning);
  return out;
}

cv::Mat decode_image(const std::string& path, int min_long_side) { return decode_image(path, min_long_side, nullptr); }

ResizeRule resize_rule(bool ultralytics, bool augment) {
  if (ultralytics) return augment ? ResizeRule::ultralytics_train : ResizeRule::ultralytics_val;
  return augment ? ResizeRule::yolov5_train : ResizeRule::yolov5_val;
}

const char* resize_rule_name(ResizeRule rule) {
  switch (rule) {
    case ResizeRule::yolov5_val: return "area";
    case ResizeRule::yolov5_train: return "linear";
    case ResizeRule::ultralytics_val: return "uval";
    case ResizeRule::ultralytics_train: return "utrain";
  }
  return "area";
}

cv::Size resized_size(int w0, int h0, int img_size, ResizeRule rule) {
  const double r = static_cast<double>(img_size) / std::max(h0, w0);
  if (r == 1.0) return {w0, h0};
  if (rule == ResizeRule::ultralytics_val || rule == ResizeRule::ultralytics_train)
    return {std::min(static_cast<int>(std::ceil(w0 * r)), img_size), std::min(static_cast<int>(std::ceil(h0 * r)), img_size)};
  return {static_cast<int>(w0 * r), static_cast<int>(h0 * r)};
}

bool resizes_linearly(ResizeRule rule, double r) { return rule != ResizeRule::yolov5_val || r > 1; }

cv::Mat load_image_resized(const std::string& path, int img_size, ResizeRule rule, int* orig_h, int* orig_w,
                           bool decode_scaling, const DecodeRegion* needed) {
  // The full-size decode goes to a per-thread buffer; only the resized image is a new allocation. When no
  // resize is needed the buffer itself is handed to the caller (and the next call allocates afresh).
  thread_local cv::Mat decoded;
  int w0 = 0, h0 = 0;
  decode_scaling = decode_scaling && (rule == ResizeRule::yolov5_train || rule == ResizeRule::ultralytics_train);
  decode_image_into(path, decode_scaling ? img_size : 0, decoded, &w0, &h0, nullptr, needed);
  if (orig_h) *orig_h = h0;
  if (orig_w) *orig_w = w0;
  const double r = static_cast<double>(img_size) / std::max(h0, w0);
  const cv::Size target = resized_size(w0, h0, img_size, rule);
  // A part-decoded image must not be resized (it was not the final frame after all): decode it whole.
  if (needed && decoded.size() == needed->frame && decoded.size() != target)
    decode_image_into(path, decode_scaling ? img_size : 0, decoded, &w0, &h0);
  if (r == 1.0 || decoded.size() == target) {
    cv::Mat out;
    std::swap(out, decoded);
    return out;
  }
  ScopedStage timer(Stage::resize);
  cv::Mat resized;
  cv::resize(decoded, resized, target, 0, 0, resizes_linearly(rule, r) ? cv::INTER_LINEAR : cv::INTER_AREA);
  return resized;
}

bool read_image_header(const unsigned char* data, size_t size, ImageHeader* header) {
  ImageHeader h;
  if (size == 0 || parse_header_fields(data, size, /*whole=*/true, &h) != HeaderParse::ok) return false;
  if (h.format == ImageFormat::jpeg) h.jpeg_missing_eoi = !(size >= 2 && data[size - 2] == 0xFF && data[size - 1] == 0xD9);
  *header = h;
  return true;
}

bool read_image_header(const std::string& path, ImageHeader* header) {
  constexpr size_t kPrefix = 64 * 1024;
  FileBytes bytes;
  std::string error;
  if (!read_file_bytes(path, &bytes, &error, kPrefix) || bytes.size() == 0) return false;
  if (bytes.whole()) return read_image_header(bytes.data(), bytes.size(), header);
  ImageHeader h;
  switch (parse_header_fields(bytes.data(), bytes.size(), /*whole=*/false, &h)) {
    case HeaderParse::unreadable:
      return false;
    case HeaderParse::need_whole:  // a big EXIF/ICC block, or a format without a header parser here
      bytes = FileBytes();
      return read_file_bytes(path, &bytes, &error) && read_image_header(bytes.data(), bytes.size(), header);
    case HeaderParse::ok:
      break;
  }
  if (h.format == ImageFormat::jpeg) {
    unsigned char tail[2] = {0, 0};
    if (!bytes.read_tail(tail, 2)) return false;
    h.jpeg_missing_eoi = !(tail[0] == 0xFF && tail[1] == 0xD9);
  }
  *header = h;
  return true;
}

bool read_image_size(const std::string& path, int* width, int* height) {
  ImageHeader h;
  if (!read_image_header(path, &h)) return false;
  *width = h.width;
  *height = h.height;
  return true;
}

}  // namespace kestrel
