// Frames of a video file for `kestrel detect`, through OpenCV's videoio (as detect.py reads them).
// Only files that start as a video container does (MP4/MOV, AVI, Matroska/WebM, MPEG program or
// transport stream, ASF/WMV, GIF) reach FFmpeg: bare codec streams, the form in which the fuzzer
// found OpenCV 4.6's FFmpeg reader copying past FFmpeg's frame buffer, are refused, as image files of
// no YOLOv5 format are. What a container declares is made safe to use: a frame count or rate that is
// absent, negative, NaN or absurd, a frame size beyond any camera's, frames that change size or
// channel count midway. Torch-free, so the video fuzz target runs it as detect does.
#pragma once
#include <opencv2/core.hpp>
#include <opencv2/videoio.hpp>
#include <string>

namespace kestrel {

class VideoReader {
 public:
  // A frame of more pixels than this (a 16384 x 8192 panorama) is refused before any is decoded.
  static constexpr double kMaxFramePixels = 16384.0 * 8192.0;
  static constexpr double kDefaultFps = 30;

  explicit VideoReader(const std::string& path);
  // Empty while the video can be read; otherwise why not (it cannot be opened, or a frame could
  // not be decoded and the video ends there), in words for a warning.
  const std::string& error() const { return error_; }
  // Frames the container declares, or 0 when it declares none that can be believed.
  int frame_count() const { return frame_count_; }
  // Frames per second the container declares, or kDefaultFps when that is missing or absurd.
  double fps() const { return fps_; }
  // The next frame as 8-bit BGR at the first frame's size (later frames of another size are resized
  // to it, so one output video holds them all). False at the end, or when a frame cannot be decoded.
  bool next(cv::Mat& bgr);

 private:
  // False (with error_ set, the capture released) for a declared frame size out of bounds.
  bool frame_size_is_plausible();

  cv::VideoCapture capture_;
  std::string error_;
  int frame_count_ = 0;
  double fps_ = kDefaultFps;
  cv::Size size_;
};

}  // namespace kestrel
