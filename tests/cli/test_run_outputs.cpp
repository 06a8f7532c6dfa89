// What a YOLOv5 user opens after a run, produced by the real binary on a small 3-class dataset:
// the run folder's plots, AutoAnchor computing anchors for a yaml that only gives their count,
// val's run folder with --save-txt/--save-conf/--save-json (a COCO results array) and --task test,
// and detect on a video with --save-crop and a rectangular --imgsz H W.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>
#include <regex>
#include <sstream>

#include "cli/journey_support.h"
#include "test_support.h"

namespace fs = std::filesystem;

namespace kestrel::test {
namespace {

// yolov5n.yaml with `anchors: 3` in place of the anchor rows.
std::string count_only_anchors_yaml(const std::string& dir) {
  std::ifstream in(std::string(KESTREL_TESTDATA_DIR) + "/../../cfg/models/yolov5n.yaml");
  std::stringstream text;
  text << in.rdbuf();
  const std::string yaml = std::regex_replace(text.str(), std::regex("anchors:[^\\n]*\\n(  - [^\\n]*\\n)+"), "anchors: 3\n");
  EXPECT_NE(yaml, text.str());
  const std::string path = dir + "/yolov5n-anchor-count.yaml";
  std::ofstream(path) << yaml;
  return path;
}

// A 12-frame video of the dataset's val images, all resized to one frame size.
std::string write_video(const std::string& images, const std::string& path) {
  cv::VideoWriter w(path, cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), 10, {128, 96});
  EXPECT_TRUE(w.isOpened());
  int frames = 0;
  for (int round = 0; frames < 12; ++round)
    for (const auto& e : fs::directory_iterator(images)) {
      cv::Mat img = cv::imread(e.path().string()), frame;
      cv::resize(img, frame, {128, 96});
      w.write(frame);
      if (++frames == 12) break;
    }
  return path;
}

class RunOutputs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = temp_dir("run_outputs");
    data_ = write_dataset(root_ + "/three", {.nc = 3, .names = NamesStyle::list, .train_images = 12});
    std::ofstream(data_, std::ios::app) << "test: images/train\n";
  }
  std::string root_, data_;
};

TEST_F(RunOutputs, TrainValDetectWriteWhatYolov5Writes) {
  const std::string cfg = count_only_anchors_yaml(root_);
  const CommandResult train = run_kestrel({"train", "--data", data_, "--cfg", cfg, "--weights", "", "--img", "64", "--epochs", "2",
                                           "--batch", "4", "--workers", "1", "--no-progress", "--project", root_ + "/runs",
                                           "--name", "plots", "--noautoanchor"},
                                          root_);
  ASSERT_EQ(train.exit_code, 0) << train.output;
  EXPECT_TRUE(train.has("AutoAnchor: ")) << train.output;  // an anchor count is computed even so
  EXPECT_TRUE(train.has("new anchors with BPR")) << train.output;
  const std::string run = root_ + "/runs/plots";
  for (const char* f : {"results.png", "labels.jpg", "train_batch0.jpg", "train_batch1.jpg", "train_batch2.jpg",
                        "confusion_matrix.png", "PR_curve.png", "F1_curve.png", "P_curve.png", "R_curve.png",
                        "val_batch0_labels.jpg", "val_batch0_pred.jpg"}) {
    const cv::Mat img = cv::imread(run + "/" + f);
    EXPECT_FALSE(img.empty()) << f << " missing or unreadable";
  }
  const std::string best = run + "/weights/best.pt";

  const CommandResult val = run_kestrel({"val", "--weights", best, "--data", data_, "--img", "64", "--workers", "1",
                                         "--no-progress", "--conf-thres", "0.0001", "--save-txt", "--save-conf", "--save-json",
                                         "--project", root_ + "/runs/val", "--name", "v"},
                                        root_);
  ASSERT_EQ(val.exit_code, 0) << val.output;
  const std::string vdir = root_ + "/runs/val/v";
  EXPECT_TRUE(fs::exists(vdir + "/confusion_matrix.png")) << val.output;
  const nlohmann::json dets = nlohmann::json::parse(std::ifstream(vdir + "/best_predictions.json"));
  ASSERT_TRUE(dets.is_array());
  ASSERT_FALSE(dets.empty());
  for (const auto& d : dets) {
    EXPECT_TRUE(d.at("image_id").is_string());  // "val_0": not all digits, so the stem itself
    EXPECT_LT(d.at("category_id").get<int>(), 3);
    ASSERT_EQ(d.at("bbox").size(), 4u);
    EXPECT_GE(d.at("bbox")[2].get<double>(), 0);
    EXPECT_LE(d.at("score").get<double>(), 1);
  }
  const std::vector<std::string> lines = read_lines(vdir + "/labels/val_0.txt");
  ASSERT_FALSE(lines.empty());
  std::istringstream first(lines.front());
  std::vector<double> v;
  for (double x; first >> x;) v.push_back(x);
  EXPECT_EQ(v.size(), 6u);  // class, x, y, w, h, conf

  const CommandResult test = run_kestrel({"val", "--weights", best, "--data", data_, "--img", "64", "--workers", "1",
                                          "--no-progress", "--task", "test", "--noplots", "--project", root_ + "/runs/val"},
                                         root_);
  ASSERT_EQ(test.exit_code, 0) << test.output;
  EXPECT_TRUE(test.has("test: 12 images")) << test.output;
  EXPECT_FALSE(fs::exists(root_ + "/runs/val/exp/confusion_matrix.png"));

  const std::string video = write_video(root_ + "/three/images/val", root_ + "/clip.avi");
  const CommandResult detect = run_kestrel({"detect", "--weights", best, "--source", video, "--imgsz", "64", "96",
                                            "--conf-thres", "0.0001", "--save-txt", "--save-crop", "--project",
                                            root_ + "/runs/detect", "--name", "d"},
                                           root_);
  ASSERT_EQ(detect.exit_code, 0) << detect.output;
  EXPECT_TRUE(detect.has("video 1/1 (frame 12/12)")) << detect.output;
  EXPECT_TRUE(detect.has("at shape (1, 3, 64, 96)")) << detect.output;
  const std::string ddir = root_ + "/runs/detect/d";
  cv::VideoCapture out(ddir + "/clip.mp4");
  ASSERT_TRUE(out.isOpened()) << detect.output;
  EXPECT_EQ(static_cast<int>(out.get(cv::CAP_PROP_FRAME_COUNT)), 12);
  EXPECT_TRUE(fs::exists(ddir + "/labels/clip_12.txt")) << detect.output;
  size_t crops = 0;
  for (const auto& e : fs::recursive_directory_iterator(ddir + "/crops")) crops += e.path().extension() == ".jpg";
  EXPECT_GT(crops, 0u);
}

}  // namespace
}  // namespace kestrel::test
