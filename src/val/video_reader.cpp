// VideoReader (see video_reader.h).
#include "val/video_reader.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio/registry.hpp>

namespace kestrel {

namespace {

// A declared property as a count: finite, positive and within int, else 0 (unknown). Casting a NaN
// or a value beyond int to int is undefined behaviour, and FFmpeg reports both for broken streams.
int believable_count(double declared) {
  if (!std::isfinite(declared) || declared < 1 || declared > std::numeric_limits<int>::max()) return 0;
  return static_cast<int>(declared);
}

// The container formats of detect.py's video extensions, by their first bytes.
bool starts_as_container(const std::string& path) {
  unsigned char h[12] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(h), sizeof h);
  if (in.gcount() < static_cast<std::streamsize>(sizeof h)) return false;
  const auto is = [&](size_t at, const char* text) { return std::memcmp(h + at, text, std::strlen(text)) == 0; };
  for (const char* box : {"ftyp", "moov", "mdat", "free", "skip", "wide"})  // MP4, MOV, M4V
    if (is(4, box)) return true;
  if (is(0, "RIFF") && is(8, "AVI ")) return true;
  if (h[0] == 0x1A && h[1] == 0x45 && h[2] == 0xDF && h[3] == 0xA3) return true;  // Matroska, WebM
  if (h[0] == 0 && h[1] == 0 && h[2] == 1 && h[3] == 0xBA) return true;          // MPEG program stream
  if (h[0] == 0x47) return true;                                                 // MPEG transport stream
  if (h[0] == 0x30 && h[1] == 0x26 && h[2] == 0xB2 && h[3] == 0x75) return true;  // ASF, WMV
  return is(0, "GIF87a") || is(0, "GIF89a");
}

}  // namespace

VideoReader::VideoReader(const std::string& path) {
  if (!starts_as_container(path)) {
    error_ = "not a video container Kestrel reads (MP4/MOV, AVI, MKV/WebM, MPEG-PS/TS, ASF/WMV, GIF)";
    return;
  }
  // FFmpeg alone where OpenCV has it: CAP_ANY would go on to GStreamer (more parsers for a hostile
  // file) and to the image-sequence reader, which takes a '%d' in the file name as a pattern and
  // reads other files of the folder as frames.
  const int backend = cv::videoio_registry::hasBackend(cv::CAP_FFMPEG) ? cv::CAP_FFMPEG : cv::CAP_ANY;
  bool opened = false;
  try {
    opened = capture_.open(path, backend);
  } catch (const cv::Exception& e) {
    error_ = "OpenCV cannot open this video (" + e.err + ")";
    return;
  }
  if (!opened) {
    error_ = "OpenCV cannot open this video";
    return;
  }
  if (!frame_size_is_plausible()) return;
  frame_count_ = believable_count(capture_.get(cv::CAP_PROP_FRAME_COUNT));
  const double fps = capture_.get(cv::CAP_PROP_FPS);
  if (std::isfinite(fps) && fps > 0 && fps <= 1000) fps_ = fps;
}

bool VideoReader::frame_size_is_plausible() {
  const double width = capture_.get(cv::CAP_PROP_FRAME_WIDTH), height = capture_.get(cv::CAP_PROP_FRAME_HEIGHT);
  if (!std::isfinite(width) || !std::isfinite(height)) return true;  // undeclared: the decoded frame is checked
  if (width * height <= kMaxFramePixels) return true;
  error_ = "its frames (" + std::to_string(static_cast<long long>(std::min(width, 1e15))) + " x " +
           std::to_string(static_cast<long long>(std::min(height, 1e15))) + " px) are larger than any camera's";
  capture_.release();
  return false;
}

bool VideoReader::next(cv::Mat& bgr) {
  if (!error_.empty()) return false;
  try {
    // FFmpeg hands some broken streams' frames to OpenCV with impossible strides, and OpenCV
    // throws: the video ends there, with a reason.
    if (!capture_.grab() || !frame_size_is_plausible() || !capture_.retrieve(bgr)) return false;
  } catch (const cv::Exception& e) {
    error_ = "a frame cannot be decoded (" + e.err + ")";
    return false;
  }
  if (bgr.empty() || bgr.total() > kMaxFramePixels) return false;
  if (bgr.depth() != CV_8U) bgr.convertTo(bgr, CV_8U);
  if (bgr.channels() == 1) cv::cvtColor(bgr, bgr, cv::COLOR_GRAY2BGR);
  else if (bgr.channels() == 4) cv::cvtColor(bgr, bgr, cv::COLOR_BGRA2BGR);
  else if (bgr.channels() != 3) return false;
  if (size_.empty()) size_ = bgr.size();
  if (bgr.size() != size_) cv::resize(bgr, bgr, size_, 0, 0, cv::INTER_AREA);
  return true;
}

}  // namespace kestrel
