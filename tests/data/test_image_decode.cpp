// decode_image / load_image_resized / read_image_header: pixels identical to cv::imread (what YOLOv5 uses)
// for JPEG, PNG (gray, RGBA, 16-bit), EXIF-rotated and truncated JPEGs; decode-time scaling; region
// decodes (whole-decode bytes inside the region); errors.
#include <turbojpeg.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "data/io/image_decode.h"
#include "image_fixtures.h"
#include "test_support.h"

namespace kestrel {
namespace {

namespace fs = std::filesystem;
using test::Bytes;
using test::encode;
using test::test_picture;
using test::with_exif;

double max_diff(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size() || a.type() != b.type()) return 1e9;
  return cv::norm(a, b, cv::NORM_INF);
}

class ImageDecodeFiles : public ::testing::Test {
 protected:
  std::string dir = test::temp_dir("decode");
  std::string file(const std::string& name, const Bytes& bytes) {
    const std::string p = dir + "/" + name;
    test::write_bytes(p, bytes);
    return p;
  }
};

TEST(ImageDecode, Coco128JpegsMatchCvImreadExactly) {
  KESTREL_REQUIRE_SHARED(root, "data/coco128/images/train2017");
  // 000000000086 is the grayscale one.
  for (const char* name : {"000000000009.jpg", "000000000086.jpg", "000000000250.jpg", "000000000650.jpg"}) {
    const std::string path = root + "/" + name;
    SCOPED_TRACE(path);
    const cv::Mat expected = cv::imread(path, cv::IMREAD_COLOR);
    ASSERT_FALSE(expected.empty());
    const cv::Mat got = decode_image(path);
    EXPECT_EQ(max_diff(got, expected), 0.0);
    int w = 0, h = 0;
    ASSERT_TRUE(read_image_size(path, &w, &h));
    EXPECT_EQ(w, expected.cols);
    EXPECT_EQ(h, expected.rows);
  }
}

TEST(ImageDecode, DecodeTimeScalingPicksTheStrongestFactorThatKeepsTheLongSide) {
  KESTREL_REQUIRE_SHARED(path, "data/coco128/images/train2017/000000000009.jpg");  // 640x480
  const cv::Mat full = decode_image(path);
  ASSERT_EQ(full.size(), cv::Size(640, 480));
  EXPECT_EQ(decode_image(path, 320).size(), cv::Size(320, 240));
  EXPECT_EQ(decode_image(path, 160).size(), cv::Size(160, 120));
  EXPECT_EQ(decode_image(path, 100).size(), cv::Size(160, 120));  // 1/8 would give 80 < 100
  EXPECT_EQ(decode_image(path, 80).size(), cv::Size(80, 60));
  EXPECT_EQ(decode_image(path, 321).size(), cv::Size(640, 480));  // 1/2 would be too small
  cv::Mat area;
  cv::resize(full, area, {320, 240}, 0, 0, cv::INTER_AREA);
  cv::Mat diff;
  cv::absdiff(decode_image(path, 320), area, diff);
  EXPECT_LT(cv::mean(diff)[0], 4.0);  // a scaled IDCT is close to, not equal to, an area resize
}

TEST(ImageDecode, LoadImageResizedFollowsEachFamily) {
  KESTREL_REQUIRE_SHARED(path, "data/coco128/images/train2017/000000000025.jpg");
  const cv::Mat full = cv::imread(path, cv::IMREAD_COLOR);
  const int h0 = full.rows, w0 = full.cols;
  for (int img_size : {320, 416, 640, 1000}) {
    for (ResizeRule rule : {ResizeRule::yolov5_val, ResizeRule::yolov5_train, ResizeRule::ultralytics_val, ResizeRule::ultralytics_train}) {
      SCOPED_TRACE(std::to_string(img_size) + " " + resize_rule_name(rule));
      const double r = static_cast<double>(img_size) / std::max(h0, w0);
      // YOLOv5: int() of each side; Ultralytics: ceil, capped at img_size. Only Ultralytics' training
      // and YOLOv5's enlarging or augmenting use INTER_LINEAR.
      const cv::Size size = (rule == ResizeRule::ultralytics_val || rule == ResizeRule::ultralytics_train)
                                ? cv::Size(std::min(static_cast<int>(std::ceil(w0 * r)), img_size), std::min(static_cast<int>(std::ceil(h0 * r)), img_size))
                                : cv::Size(static_cast<int>(w0 * r), static_cast<int>(h0 * r));
      cv::Mat expected = full;
      if (r != 1) cv::resize(full, expected, size, 0, 0, (rule != ResizeRule::yolov5_val || r > 1) ? cv::INTER_LINEAR : cv::INTER_AREA);
      int oh = 0, ow = 0;
      const cv::Mat exact = load_image_resized(path, img_size, rule, &oh, &ow, /*decode_scaling=*/false);
      EXPECT_EQ(oh, h0);
      EXPECT_EQ(ow, w0);
      EXPECT_EQ(max_diff(exact, expected), 0.0);
      const cv::Mat fast = load_image_resized(path, img_size, rule, &oh, &ow);
      EXPECT_EQ(oh, h0);
      EXPECT_EQ(ow, w0);
      ASSERT_EQ(fast.size(), size);
      // Validation never decodes at a reduced scale: the pixels the reference tools score.
      if (rule == ResizeRule::yolov5_val || rule == ResizeRule::ultralytics_val) EXPECT_EQ(max_diff(fast, expected), 0.0);
      cv::Mat diff;
      cv::absdiff(fast, expected, diff);
      EXPECT_LT(cv::mean(diff)[0], 6.0);
    }
  }
}

TEST(ImageDecode, LoadImageResizedResultsDoNotShareBuffers) {
  KESTREL_REQUIRE_SHARED(root, "data/coco128/images/train2017");
  const std::string a = root + "/000000000009.jpg", b = root + "/000000000025.jpg";  // both 640 wide
  int h = 0, w = 0;
  const cv::Mat first = load_image_resized(a, 640, ResizeRule::yolov5_val, &h, &w);  // r == 1: no resize
  const cv::Mat second = load_image_resized(b, 640, ResizeRule::yolov5_val, &h, &w);
  const cv::Mat third = load_image_resized(a, 320, ResizeRule::yolov5_val, &h, &w);
  EXPECT_NE(first.data, second.data);
  EXPECT_EQ(max_diff(first, cv::imread(a, cv::IMREAD_COLOR)), 0.0);
  EXPECT_EQ(max_diff(second, cv::imread(b, cv::IMREAD_COLOR)), 0.0);
  EXPECT_EQ(third.size(), cv::Size(320, 240));
}

TEST_F(ImageDecodeFiles, ExifOrientationMatchesCvImreadForAllEightValues) {
  const cv::Mat picture = test_picture(48, 80);
  const Bytes jpeg = encode(".jpg", picture, {cv::IMWRITE_JPEG_QUALITY, 95});
  const cv::Mat upright = decode_image(file("plain.jpg", jpeg));
  for (bool big_endian : {false, true}) {
    for (int orientation = 1; orientation <= 8; ++orientation) {
      SCOPED_TRACE("orientation " + std::to_string(orientation) + (big_endian ? " MM" : " II"));
      const Bytes bytes = with_exif(jpeg, orientation, big_endian);
      EXPECT_EQ(jpeg_exif_orientation(bytes.data(), bytes.size()), orientation);
      const std::string path = file("o" + std::to_string(orientation) + (big_endian ? "m" : "i") + ".jpg", bytes);
      const cv::Mat got = decode_image(path);
      EXPECT_EQ(max_diff(got, cv::imread(path, cv::IMREAD_COLOR)), 0.0);
      const bool swapped = orientation >= 5;
      EXPECT_EQ(got.cols, swapped ? 48 : 80);
      ImageHeader header;
      ASSERT_TRUE(read_image_header(path, &header));
      EXPECT_EQ(header.orientation, orientation);
      EXPECT_EQ(header.width, got.cols);
      EXPECT_EQ(header.height, got.rows);
      EXPECT_FALSE(header.jpeg_missing_eoi);
    }
  }
  // Orientation 6 means "rotate 90 degrees clockwise to view".
  cv::Mat cw;
  cv::rotate(upright, cw, cv::ROTATE_90_CLOCKWISE);
  EXPECT_EQ(max_diff(decode_image(dir + "/o6i.jpg"), cw), 0.0);
  // Scaled decode is oriented too, and load_image_resized reports the oriented original size.
  int oh = 0, ow = 0;
  const cv::Mat small = load_image_resized(dir + "/o6i.jpg", 40, ResizeRule::yolov5_val, &oh, &ow);
  EXPECT_EQ(oh, 80);
  EXPECT_EQ(ow, 48);
  EXPECT_EQ(small.size(), cv::Size(24, 40));
}

TEST_F(ImageDecodeFiles, MalformedExifIsIgnored) {
  const Bytes jpeg = encode(".jpg", test_picture(32, 32));
  Bytes bytes = with_exif(jpeg, 6, false);
  bytes[2 + 4 + 6 + 4] = 0xFF;  // IFD0 offset now points far outside the segment
  EXPECT_EQ(jpeg_exif_orientation(bytes.data(), bytes.size()), 1);
  const Bytes cut(bytes.begin(), bytes.begin() + 20);  // header cut inside the Exif segment
  EXPECT_EQ(jpeg_exif_orientation(cut.data(), cut.size()), 1);
  EXPECT_EQ(decode_image(file("badexif.jpg", bytes)).size(), cv::Size(32, 32));
  // Found by fuzz_image_header: a TIFF block shorter than one IFD entry once made the entry bound wrap.
  const Bytes short_ifd = {0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x13, 'E', 'x', 'i', 'f', 0, 0, 'M', 'M', 0x00, 0x2A,
                           0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xD9};
  EXPECT_EQ(jpeg_exif_orientation(short_ifd.data(), short_ifd.size()), 1);
}

TEST_F(ImageDecodeFiles, PngGrayRgbaAnd16BitMatchCvImread) {
  const cv::Mat picture = test_picture(30, 40);
  cv::Mat gray, rgba, deep;
  cv::cvtColor(picture, gray, cv::COLOR_BGR2GRAY);
  cv::cvtColor(picture, rgba, cv::COLOR_BGR2BGRA);
  for (int y = 0; y < rgba.rows; ++y) rgba.at<cv::Vec4b>(y, 3)[3] = static_cast<uchar>(y * 8);  // some alpha
  picture.convertTo(deep, CV_16UC3, 257.0);
  deep.at<cv::Vec3w>(0, 0) = cv::Vec3w(0x12ff, 0x3480, 0xffff);  // low bytes that rounding would notice
  for (const auto& [name, img] : {std::pair<std::string, cv::Mat>{"gray.png", gray}, {"rgba.png", rgba},
                                  {"deep.png", deep}}) {
    SCOPED_TRACE(name);
    const std::string path = file(name, encode(".png", img));
    const cv::Mat got = decode_image(path);
    EXPECT_EQ(got.type(), CV_8UC3);
    EXPECT_EQ(max_diff(got, cv::imread(path, cv::IMREAD_COLOR)), 0.0);
    int w = 0, h = 0;
    ASSERT_TRUE(read_image_size(path, &w, &h));
    EXPECT_EQ(cv::Size(w, h), cv::Size(40, 30));
  }
  // What IMREAD_COLOR does with 16 bits: the high byte (libpng strip_16), and BGR order kept.
  const cv::Vec3b px = decode_image(dir + "/deep.png").at<cv::Vec3b>(0, 0);
  EXPECT_EQ(px, cv::Vec3b(0x12, 0x34, 0xff));
  cv::Mat rgb3;
  cv::cvtColor(rgba, rgb3, cv::COLOR_BGRA2BGR);
  EXPECT_EQ(max_diff(decode_image(dir + "/rgba.png"), rgb3), 0.0);  // alpha dropped, not blended
}

TEST_F(ImageDecodeFiles, FormatComesFromContentNotExtension) {
  const cv::Mat picture = test_picture(24, 36);
  const std::string png_as_jpg = file("really_png.jpg", encode(".png", picture));
  EXPECT_EQ(max_diff(decode_image(png_as_jpg), picture), 0.0);  // PNG is lossless
  const std::string jpg_as_png = file("really_jpg.png", encode(".jpg", picture));
  EXPECT_EQ(max_diff(decode_image(jpg_as_png), cv::imread(jpg_as_png, cv::IMREAD_COLOR)), 0.0);
  ImageHeader header;
  ASSERT_TRUE(read_image_header(png_as_jpg, &header));
  EXPECT_EQ(header.format, ImageFormat::png);
  ASSERT_TRUE(read_image_header(jpg_as_png, &header));
  EXPECT_EQ(header.format, ImageFormat::jpeg);
}

TEST_F(ImageDecodeFiles, HeaderSizesOfOtherFormats) {
  const cv::Mat picture = test_picture(21, 34);
  for (const char* ext : {".bmp", ".webp", ".tiff"}) {
    SCOPED_TRACE(ext);
    Bytes bytes;
    if (!cv::imencode(ext, picture, bytes)) continue;  // codec not built in
    const std::string path = file(std::string("pic") + ext, bytes);
    int w = 0, h = 0;
    ASSERT_TRUE(read_image_size(path, &w, &h));
    EXPECT_EQ(cv::Size(w, h), picture.size());
    EXPECT_EQ(max_diff(decode_image(path), cv::imread(path, cv::IMREAD_COLOR)), 0.0);
  }
  // Lossless WebP (VP8L) header too.
  Bytes lossless;
  if (cv::imencode(".webp", picture, lossless, {cv::IMWRITE_WEBP_QUALITY, 101})) {
    int w = 0, h = 0;
    ASSERT_TRUE(read_image_size(file("lossless.webp", lossless), &w, &h));
    EXPECT_EQ(cv::Size(w, h), picture.size());
  }
}

TEST_F(ImageDecodeFiles, CmykJpegFallsBackToOpenCv) {
  const int w = 32, h = 24;
  std::vector<unsigned char> cmyk(static_cast<size_t>(w) * h * 4);
  for (size_t i = 0; i < cmyk.size(); ++i) cmyk[i] = static_cast<unsigned char>((i * 37) % 251);
  tjhandle tj = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  ASSERT_EQ(tjCompress2(tj, cmyk.data(), w, 0, h, TJPF_CMYK, &jpeg, &size, TJSAMP_444, 90, 0), 0);
  const std::string path = file("cmyk.jpg", Bytes(jpeg, jpeg + size));
  tjFree(jpeg);
  tjDestroy(tj);
  const cv::Mat got = decode_image(path);
  EXPECT_EQ(got.type(), CV_8UC3);
  EXPECT_EQ(max_diff(got, cv::imread(path, cv::IMREAD_COLOR)), 0.0);
}

TEST_F(ImageDecodeFiles, TruncatedJpegDecodesWithAWarning) {
  const Bytes jpeg = encode(".jpg", test_picture(64, 64));
  const std::string no_eoi = file("no_eoi.jpg", Bytes(jpeg.begin(), jpeg.end() - 2));
  const std::string half = file("half.jpg", Bytes(jpeg.begin(), jpeg.begin() + jpeg.size() / 2));
  for (const std::string& path : {no_eoi, half}) {
    SCOPED_TRACE(path);
    std::string warning;
    const cv::Mat got = decode_image(path, 0, &warning);
    EXPECT_EQ(got.size(), cv::Size(64, 64));
    EXPECT_NE(warning.find(path), std::string::npos) << warning;
    EXPECT_EQ(max_diff(got, cv::imread(path, cv::IMREAD_COLOR)), 0.0);  // libjpeg's fill, as cv2.imread
    ImageHeader header;
    ASSERT_TRUE(read_image_header(path, &header));
    EXPECT_TRUE(header.jpeg_missing_eoi);
  }
  std::string warning = "stale";
  decode_image(file("whole.jpg", jpeg), 0, &warning);
  EXPECT_TRUE(warning.empty());
}

// A region decode must give a whole decode's bytes inside the region, for every JPEG layout whose cut
// could go wrong: 4:2:0, 4:2:2 and 4:4:4 chroma, grayscale, progressive, restart markers, sizes that are
// not whole MCUs, decode-time scaling, and regions touching every edge.
void expect_regions_match_whole_decode(const std::string& path, int min_long_side, cv::RNG& rng) {
  cv::Mat whole;
  decode_image_into(path, min_long_side, whole);
  const int w = whole.cols, h = whole.rows;
  for (int trial = 0; trial < 12; ++trial) {
    const int x0 = trial % 4 == 0 ? 0 : rng.uniform(0, w), y0 = trial % 3 == 0 ? 0 : rng.uniform(0, h);
    const int x1 = trial % 5 == 1 ? w : rng.uniform(x0 + 1, w + 1), y1 = trial % 2 ? h : rng.uniform(y0 + 1, h + 1);
    const cv::Rect rect(x0, y0, x1 - x0, y1 - y0);
    SCOPED_TRACE(::testing::Message() << path << " region " << rect << " of " << whole.size());
    const DecodeRegion region{rect, whole.size()};
    cv::Mat part(h, w, CV_8UC3, cv::Scalar::all(7));
    decode_image_into(path, min_long_side, part, nullptr, nullptr, nullptr, &region);
    ASSERT_EQ(part.size(), whole.size());
    EXPECT_EQ(max_diff(part(rect), whole(rect)), 0.0);
  }
}

// A BGR picture as a JPEG with the given chroma subsampling (OpenCV 4.6 cannot choose it).
Bytes encode_subsampled(const cv::Mat& bgr, int subsamp) {
  tjhandle tj = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  EXPECT_EQ(tjCompress2(tj, bgr.data, bgr.cols, static_cast<int>(bgr.step[0]), bgr.rows, TJPF_BGR, &jpeg, &size,
                        subsamp, 90, 0),
            0);
  Bytes out(jpeg, jpeg + size);
  tjFree(jpeg);
  tjDestroy(tj);
  return out;
}

TEST_F(ImageDecodeFiles, RegionDecodeGivesTheWholeDecodesBytesInsideTheRegion) {
  cv::RNG rng(11);
  const cv::Mat picture = test_picture(203, 317);
  cv::Mat noisy = picture.clone();
  cv::randn(noisy, cv::Scalar::all(0), cv::Scalar::all(40));
  noisy += picture;  // detail everywhere, so a wrong row or column shows
  cv::Mat gray;
  cv::cvtColor(noisy, gray, cv::COLOR_BGR2GRAY);
  const std::vector<std::pair<std::string, Bytes>> files = {
      {"420.jpg", encode(".jpg", noisy)},
      {"422.jpg", encode_subsampled(noisy, TJSAMP_422)},
      {"444.jpg", encode_subsampled(noisy, TJSAMP_444)},
      {"440.jpg", encode_subsampled(noisy, TJSAMP_440)},
      {"gray.jpg", encode(".jpg", gray)},
      {"progressive.jpg", encode(".jpg", noisy, {cv::IMWRITE_JPEG_PROGRESSIVE, 1})},
      {"restarts.jpg", encode(".jpg", noisy, {cv::IMWRITE_JPEG_RST_INTERVAL, 3})},
  };
  for (const auto& [name, bytes] : files) {
    const std::string path = file(name, bytes);
    expect_regions_match_whole_decode(path, 0, rng);
    expect_regions_match_whole_decode(path, 150, rng);  // decoded at 1/2
  }
}

// Greyscale JPEGs decode to one channel and are spread to BGR: the bytes must be OpenCV's, whole, cut
// short (libjpeg's fill) and EXIF-rotated.
TEST_F(ImageDecodeFiles, GreyscaleJpegMatchesCvImread) {
  cv::Mat noisy = test_picture(75, 122), grey;
  cv::randn(noisy, cv::Scalar::all(0), cv::Scalar::all(40));
  noisy += test_picture(75, 122);
  cv::cvtColor(noisy, grey, cv::COLOR_BGR2GRAY);
  const Bytes whole = encode(".jpg", grey);
  const std::vector<std::pair<std::string, Bytes>> files = {
      {"grey.jpg", whole},
      {"grey_cut.jpg", Bytes(whole.begin(), whole.begin() + whole.size() / 2)},
      {"grey_rotated.jpg", with_exif(whole, 6)},
  };
  for (const auto& [name, bytes] : files) {
    const std::string path = file(name, bytes);
    SCOPED_TRACE(path);
    const cv::Mat want = cv::imread(path, cv::IMREAD_COLOR);
    ASSERT_EQ(want.channels(), 3);
    EXPECT_EQ(max_diff(decode_image(path), want), 0.0);
  }
}

TEST_F(ImageDecodeFiles, RegionDecodeFallsBackToWholeWhenItCannotApply) {
  const cv::Mat picture = test_picture(48, 80);
  const std::string plain = file("plain.jpg", encode(".jpg", picture));
  const std::string rotated = file("rotated.jpg", with_exif(encode(".jpg", picture), 6));
  const cv::Rect corner(0, 0, 8, 8);
  for (const auto& [path, frame] : {std::pair{rotated, cv::Size(48, 80)}, std::pair{plain, cv::Size(40, 24)}}) {
    SCOPED_TRACE(path);  // EXIF-rotated; a frame that is not the decoded size
    const DecodeRegion region{corner, frame};
    cv::Mat got;
    decode_image_into(path, 0, got, nullptr, nullptr, nullptr, &region);
    EXPECT_EQ(max_diff(got, cv::imread(path, cv::IMREAD_COLOR)), 0.0);
  }
  // A file cut short: the region decode gives libjpeg's fill, as the whole decode does, and warns when
  // it reads into the missing part.
  const Bytes whole_file = encode(".jpg", picture);
  const std::string cut = file("cut.jpg", Bytes(whole_file.begin(), whole_file.begin() + whole_file.size() / 2));
  for (const cv::Rect& rect : {cv::Rect(0, 0, 80, 8), cv::Rect(10, 30, 40, 18)}) {
    SCOPED_TRACE(::testing::Message() << "truncated, region " << rect);
    const DecodeRegion region{rect, cv::Size(80, 48)};
    cv::Mat got;
    std::string warning;
    decode_image_into(cut, 0, got, nullptr, nullptr, &warning, &region);
    const cv::Mat want = cv::imread(cut, cv::IMREAD_COLOR);
    EXPECT_EQ(max_diff(got(rect), want(rect)), 0.0);
    if (rect.y > 0) EXPECT_NE(warning.find(cut), std::string::npos) << warning;
  }
  // Garbage after the header is an error naming the file, not a crash.
  Bytes broken = whole_file;
  for (size_t i = broken.size() / 3; i < broken.size() - 2; ++i) broken[i] = static_cast<unsigned char>(i * 7);
  const std::string garbled = file("garbled.jpg", broken);
  const DecodeRegion lower{cv::Rect(0, 24, 80, 24), cv::Size(80, 48)};
  cv::Mat garbled_out;
  try {
    decode_image_into(garbled, 0, garbled_out, nullptr, nullptr, nullptr, &lower);
  } catch (const ImageError& e) {
    EXPECT_NE(std::string(e.what()).find(garbled), std::string::npos) << e.what();
  }
  // An empty region decodes no pixels but still gives the frame's size.
  const DecodeRegion nothing{cv::Rect(), cv::Size(80, 48)};
  cv::Mat got;
  int w = 0, h = 0;
  decode_image_into(plain, 0, got, &w, &h, nullptr, &nothing);
  EXPECT_EQ(got.size(), cv::Size(80, 48));
  EXPECT_EQ(w, 80);
}

TEST(ImageDecode, Coco128RegionDecodesMatchWholeDecodes) {
  KESTREL_REQUIRE_SHARED(root, "data/coco128/images/train2017");
  cv::RNG rng(5);
  for (const char* name : {"000000000009.jpg", "000000000086.jpg", "000000000250.jpg", "000000000650.jpg"}) {
    expect_regions_match_whole_decode(root + "/" + name, 0, rng);
    expect_regions_match_whole_decode(root + "/" + name, 320, rng);
  }
}

// A file no YOLOv5 format claims never reaches OpenCV's other codecs: its DICOM reader (GDCM) aborts the
// process on this cut file (found by fuzz/fuzz_jpeg_region) instead of failing.
TEST_F(ImageDecodeFiles, FilesOfOtherFormatsAreErrorsNotCrashes) {
  Bytes cut_dicom(128, 0x00);  // preamble
  for (const char c : {'D', 'I', 'C', 'M'}) cut_dicom.push_back(static_cast<unsigned char>(c));
  cut_dicom.push_back(0xff);
  const std::string path = file("scan.jpg", cut_dicom);
  try {
    decode_image(path);
    ADD_FAILURE() << "decoded a cut DICOM file";
  } catch (const ImageError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a JPEG, PNG, BMP, WebP, TIFF or PFM"), std::string::npos) << e.what();
  }
  ImageHeader header;
  EXPECT_FALSE(read_image_header(path, &header));
  // PFM still goes to OpenCV.
  const cv::Mat gradient = test_picture(6, 9);
  cv::Mat as_float;
  gradient.convertTo(as_float, CV_32FC3, 1 / 255.0);
  const std::string pfm = file("float.pfm", encode(".pfm", as_float));
  EXPECT_EQ(decode_image(pfm).size(), cv::Size(9, 6));
}

TEST_F(ImageDecodeFiles, UnreadableFilesThrowNamingTheFile) {
  const std::string empty = file("empty.jpg", {});
  const std::string garbage = file("garbage.png", Bytes(100, 0x42));
  const Bytes jpeg = encode(".jpg", test_picture(16, 16));
  const std::string header_only = file("cut_header.jpg", Bytes(jpeg.begin(), jpeg.begin() + 30));
  const std::string missing = dir + "/missing.jpg";
  for (const std::string& path : {empty, garbage, header_only, missing}) {
    SCOPED_TRACE(path);
    try {
      decode_image(path);
      ADD_FAILURE() << "no exception";
    } catch (const ImageError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
    int w = 0, h = 0;
    EXPECT_FALSE(read_image_size(path, &w, &h));
  }
}

TEST_F(ImageDecodeFiles, DecodeIntoReusesTheBuffer) {
  const std::string path = file("pic.jpg", encode(".jpg", test_picture(40, 50)));
  cv::Mat out;
  int fw = 0, fh = 0;
  decode_image_into(path, 0, out, &fw, &fh);
  const uchar* buffer = out.data;
  decode_image_into(path, 0, out, &fw, &fh);
  EXPECT_EQ(out.data, buffer);
  EXPECT_EQ(fw, 50);
  EXPECT_EQ(fh, 40);
}

}  // namespace
}  // namespace kestrel
