// detect.py's outputs: the txt line format and order, the per-image summary, and real detections
// of the official yolov5n.pt on coco128 images checked against their labels.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "data/io/image_decode.h"
#include "data/index/label_index.h"
#include "eval/boxes.h"
#include "model/model_config.h"
#include "model/pt_reader.h"
#include "torch_support.h"
#include "val/detect.h"

namespace kestrel {
namespace {

TEST(Detect, TxtLinesAreNormalisedXywhLowestConfidenceFirst) {
  const torch::Tensor boxes = torch::tensor({{10.f, 20.f, 110.f, 220.f, 0.9f, 3.f}, {0.f, 0.f, 50.f, 50.f, 0.5f, 1.f}});
  // Image 400 wide, 200 high: box 0 is centred at (60, 120), 100 x 200.
  EXPECT_EQ(detections_to_yolo_txt(boxes, 200, 400, false), "1 0.0625 0.125 0.125 0.25\n3 0.15 0.6 0.25 1\n");
  EXPECT_EQ(detections_to_yolo_txt(boxes, 200, 400, true),
            "1 0.0625 0.125 0.125 0.25 0.5\n3 0.15 0.6 0.25 1 0.9\n");
  EXPECT_EQ(detections_to_yolo_txt(torch::zeros({0, 6}), 200, 400, true), "");
  EXPECT_EQ(detections_to_yolo_txt(boxes, 200, 400, false, /*reversed=*/false),  // val.py's order
            "3 0.15 0.6 0.25 1\n1 0.0625 0.125 0.125 0.25\n");
}

TEST(Detect, SummaryCountsClassesInAscendingOrder) {
  const torch::Tensor boxes = torch::tensor({{0.f, 0.f, 1.f, 1.f, 0.9f, 2.f}, {0.f, 0.f, 1.f, 1.f, 0.8f, 0.f},
                                             {0.f, 0.f, 1.f, 1.f, 0.7f, 2.f}});
  EXPECT_EQ(summarize_detections(boxes, {"person", "bicycle", "bus"}), "1 person, 2 buss, ");
  EXPECT_EQ(summarize_detections(torch::zeros({0, 6}), {"a"}), "(no detections), ");
}

// Detections from the official weights must land on the labelled objects: most labels of the first
// coco128 images are found with the right class at IoU >= 0.5, and most detections are labelled
// objects. Wrong letterboxing, channel order or box scaling drives both rates towards zero.
TEST(Detect, Yolov5nFindsTheLabelledObjectsOfCoco128) {
  KESTREL_REQUIRE_SHARED(weights, "weights/yolov5n.pt");
  KESTREL_REQUIRE_SHARED(images, "data/coco128/images/train2017");
  torch::set_num_threads(2);
  const PtCheckpoint ckpt = read_pt_checkpoint(weights);
  DetectionModel model(parse_model_config(ckpt.model_yaml, weights), ckpt.nc);
  ASSERT_EQ(model->load_matching(ckpt.state), model->state().size());
  model->eval();
  model->fuse();
  std::vector<std::string> files = list_image_files({images});
  files.resize(16);
  int64_t labels_total = 0, labels_found = 0, detections_total = 0, detections_true = 0;
  for (const auto& path : files) {
    const cv::Mat image = decode_image(path);
    const Detections d = detect_image(*model, image, DetectOptions{}, torch::kCPU);
    EXPECT_EQ(d.input_w % 32, 0);
    EXPECT_EQ(d.input_h % 32, 0);
    EXPECT_EQ(std::max(d.input_w, d.input_h), 640);
    ASSERT_EQ(d.boxes.dim(), 2);
    detections_total += d.boxes.size(0);
    const std::string label_file = label_path_for_image(path);
    if (!std::filesystem::exists(label_file)) continue;
    std::ifstream in(label_file);
    std::vector<float> rows;
    for (float v; in >> v;) rows.push_back(v);
    const int64_t n = static_cast<int64_t>(rows.size() / 5);
    torch::Tensor labels = torch::from_blob(rows.data(), {n, 5}, torch::kFloat32).clone();
    torch::Tensor gt = xywh2xyxy(labels.slice(1, 1, 5) * torch::tensor({image.cols, image.rows, image.cols, image.rows}, torch::kFloat32));
    labels_total += n;
    if (d.boxes.size(0) == 0) continue;
    const torch::Tensor iou = box_iou(gt, d.boxes.slice(1, 0, 4));
    const torch::Tensor same_class = labels.select(1, 0).unsqueeze(1) == d.boxes.select(1, 5).unsqueeze(0);
    const torch::Tensor hit = (iou >= 0.5) & same_class;
    labels_found += hit.any(1).sum().item<int64_t>();
    detections_true += hit.any(0).sum().item<int64_t>();
  }
  ASSERT_GT(labels_total, 50);
  const double recall = static_cast<double>(labels_found) / labels_total;
  const double precision = static_cast<double>(detections_true) / std::max<int64_t>(detections_total, 1);
  std::cout << "labels " << labels_total << ", found " << labels_found << " (" << recall << "); detections "
            << detections_total << ", on a label " << detections_true << " (" << precision << ")\n";
  EXPECT_GT(recall, 0.35);
  EXPECT_GT(precision, 0.55);
}

}  // namespace
}  // namespace kestrel
