// libFuzzer target for the video path of `kestrel detect` (val/video_reader.h): the input is written
// to a file, as a user's video would be, opened with FFmpeg through OpenCV's videoio and read up to
// 32 frames. Nothing may crash, hang or allocate without bound; every frame handed out is non-empty
// 8-bit BGR at the first frame's size, and the declared count and rate are in range. FFmpeg is not
// instrumented, so coverage guides little beyond VideoReader itself: this is a robustness run over
// mutated containers. The seed corpus (fuzz/corpus_video) is OpenCV-written: 7 frames of 80x60 as
// MJPEG in .avi, the same as mp4v in .mp4, and 4 frames of 32x24 greyscale MJPEG.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "val/video_reader.h"

namespace {

void require(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/kestrel_fuzz_video_" + std::to_string(getpid()) + ".avi";
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), size);
  kestrel::VideoReader video(path);
  require(video.frame_count() >= 0);
  require(video.fps() > 0 && video.fps() <= 1000);
  cv::Mat frame;
  cv::Size first;
  for (int n = 0; n < 32 && video.next(frame); ++n) {
    require(!frame.empty() && frame.type() == CV_8UC3);
    if (first.empty()) first = frame.size();
    require(frame.size() == first);
  }
  return 0;
}
