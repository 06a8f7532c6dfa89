// VideoReader on videos OpenCV writes and on files that are not what their names say: every frame
// comes as BGR at the declared rate, junk is refused with a reason, and a '%d' in a file name is a
// name, not a pattern that would read the folder's other files as frames; bare codec streams are
// refused before FFmpeg sees them.
#include <gtest/gtest.h>

#include <fstream>
#include <opencv2/imgcodecs.hpp>

#include "test_support.h"
#include "val/video_reader.h"

namespace kestrel {
namespace {

// Frames whose blue channel counts them, so their order shows after the MJPEG round trip.
std::string write_avi(const std::string& path, int frames, double fps, cv::Size size) {
  cv::VideoWriter w(path, cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), fps, size);
  EXPECT_TRUE(w.isOpened()) << path;
  for (int i = 0; i < frames; ++i) w.write(cv::Mat(size, CV_8UC3, cv::Scalar(20 * i, 100, 200)));
  return path;
}

TEST(VideoReader, ReadsEveryFrameAsBgrAtTheDeclaredRate) {
  const std::string path = write_avi(test::temp_dir("video") + "/clip.avi", 7, 12.5, {80, 60});
  VideoReader video(path);
  ASSERT_EQ(video.error(), "");
  EXPECT_EQ(video.frame_count(), 7);
  EXPECT_DOUBLE_EQ(video.fps(), 12.5);
  cv::Mat frame;
  int n = 0;
  for (; video.next(frame); ++n) {
    ASSERT_EQ(frame.type(), CV_8UC3);
    ASSERT_EQ(frame.size(), cv::Size(80, 60));
    EXPECT_NEAR(frame.at<cv::Vec3b>(30, 40)[0], 20 * n, 3) << "frame " << n;
  }
  EXPECT_EQ(n, 7);
}

TEST(VideoReader, JunkIsRefusedWithAReason) {
  const std::string path = test::temp_dir("video") + "/junk.mp4";
  std::ofstream(path, std::ios::binary) << std::string(4096, '\x5a');
  VideoReader video(path);
  EXPECT_NE(video.error().find("not a video container"), std::string::npos) << video.error();
  cv::Mat frame;
  EXPECT_FALSE(video.next(frame));
}

TEST(VideoReader, PercentInTheNameIsNotAPatternOverOtherFiles) {
  const std::string dir = test::temp_dir("video");
  // OpenCV's image-sequence reader would open frame%d.mp4 as frame1.mp4, frame2.mp4, ... and read
  // these JPEGs as its frames.
  std::vector<uchar> jpeg;
  cv::imencode(".jpg", cv::Mat(40, 50, CV_8UC3, cv::Scalar(10, 200, 30)), jpeg);
  for (const char* name : {"/frame1.mp4", "/frame2.mp4"})
    std::ofstream(dir + name, std::ios::binary).write(reinterpret_cast<const char*>(jpeg.data()), jpeg.size());
  std::ofstream(dir + "/frame%d.mp4", std::ios::binary) << std::string("RIFF\0\0\0\0AVI junk", 16);  // passes the sniff, not FFmpeg
  VideoReader video(dir + "/frame%d.mp4");
  EXPECT_NE(video.error(), "");
  cv::Mat frame;
  EXPECT_FALSE(video.next(frame));
}

// The fuzzer's finds: bare MPEG-4 streams (no container) whose frames make OpenCV 4.6 throw from
// read() (123 bytes) or copy past the end of FFmpeg's frame buffer (4 x 2048 and 24 x 1132 px
// frames, seen under AddressSanitizer). None reaches FFmpeg.
TEST(VideoReader, BareCodecStreamsAreRefusedUnread) {
  for (const char* name : {"regression_mat_step.m4v", "regression_sliver.m4v", "regression_overread.m4v"}) {
    VideoReader video(std::string(KESTREL_TESTDATA_DIR) + "/../../fuzz/corpus_video/" + name);
    EXPECT_EQ(video.error(), "not a video container Kestrel reads (MP4/MOV, AVI, MKV/WebM, MPEG-PS/TS, ASF/WMV, GIF)") << name;
    cv::Mat frame;
    EXPECT_FALSE(video.next(frame)) << name;
  }
}

}  // namespace
}  // namespace kestrel
