// The exported ONNX graph against Kestrel's own forward, read by OpenCV dnn: a small two-level model
// with every layer type the yaml offers (SPP, repeated Conv, C3 without shortcut, Upsample, Concat)
// at a non-square size, built-in models of both families, and the official yolov5n.pt on 16 coco128 images, where
// the detections after NMS must be Kestrel's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/atomic_file.h"
#include "data/io/image_decode.h"
#include "data/index/label_index.h"
#include "export/onnx_export.h"
#include "export/opencv_onnx.h"
#include "model/channel_prune.h"
#include "model/model_config.h"
#include "model/ultralytics_blocks.h"
#include "model/weights.h"
#include "test_support.h"
#include "val/detect.h"

namespace kestrel {
namespace {

// 2 classes, 2 anchors on 2 levels (strides 8 and 16), width 0.25.
constexpr const char* kSmallYaml = R"(nc: 2
depth_multiple: 1.0
width_multiple: 0.25
anchors:
  - [10,13, 16,30]
  - [30,61, 62,45]
backbone:
  [[-1, 1, Conv, [32, 6, 2, 2]],
   [-1, 1, Conv, [64, 3, 2]],
   [-1, 2, Conv, [64, 3, 1]],
   [-1, 1, Conv, [128, 3, 2]],
   [-1, 1, C3, [128, False]],
   [-1, 1, Conv, [256, 3, 2]],
   [-1, 1, SPP, [256, [3, 5, 7]]],
  ]
head:
  [[-1, 1, Conv, [128, 1, 1]],
   [-1, 1, nn.Upsample, [None, 2, 'nearest']],
   [[-1, 4], 1, Concat, [1]],
   [-1, 1, C3, [128, False]],
   [[10, 7], 1, Detect, [nc, anchors]],
  ]
)";

DetectionModel inference_model(const std::string& yaml, const std::string& source, int64_t nc) {
  torch::manual_seed(3);
  DetectionModel model(parse_model_config(yaml, source), nc);
  // BatchNorm statistics away from their defaults, so the fused convolutions differ from the raw ones.
  torch::NoGradGuard no_grad;
  for (auto& buffer : model->named_buffers())
    if (buffer.key().find("running_var") != std::string::npos) buffer.value().uniform_(0.5, 2.0);
  std::vector<std::string> names;
  for (int64_t c = 0; c < nc; ++c) names.push_back("kind" + std::to_string(c));
  model->set_names(names);
  prepare_for_inference(*model, torch::kCPU);
  return model;
}

// Writes the export and returns OpenCV's reading of it.
OpenCvOnnxModel write_and_read(const OnnxExport& onnx, const std::string& name) {
  const std::string path = test::temp_dir("onnx_export") + "/" + name + ".onnx";
  write_file_atomic(path, onnx.bytes);
  return OpenCvOnnxModel(path);
}

TEST(OnnxExport, SmallTwoLevelModelMatchesKestrelAtANonSquareSize) {
  DetectionModel model = inference_model(kSmallYaml, "small.yaml", 2);
  ASSERT_EQ(model->stride(), (std::vector<double>{8, 16}));
  const OnnxExport onnx = export_onnx(*model, 96, 160);
  EXPECT_EQ(onnx.input_shape, (std::vector<int64_t>{1, 3, 96, 160}));
  EXPECT_EQ(onnx.output_shape, (std::vector<int64_t>{1, 2 * (12 * 20 + 6 * 10), 7}));
  OpenCvOnnxModel theirs = write_and_read(onnx, "small");

  torch::NoGradGuard no_grad;
  torch::manual_seed(4);
  const torch::Tensor images = torch::rand({1, 3, 96, 160});
  const torch::Tensor ours = model->decode(model->forward(images));
  const torch::Tensor got = theirs.forward(images);
  ASSERT_EQ(got.sizes(), ours.sizes());
  EXPECT_LT(largest_relative_difference(got, ours), 1e-4);
  EXPECT_GT(ours.select(2, 2).max().item<float>(), 10.f);  // real pixel sizes, not an all-zero output
}

TEST(OnnxExport, BuiltInYolov5nOfThreeClassesMatchesKestrel) {
  DetectionModel model = inference_model(load_model_config("yolov5n.yaml").text, "yolov5n.yaml", 3);
  const OnnxExport onnx = export_onnx(*model, 128, 192);
  EXPECT_EQ(onnx.output_shape, (std::vector<int64_t>{1, 3 * (16 * 24 + 8 * 12 + 4 * 6), 8}));
  OpenCvOnnxModel theirs = write_and_read(onnx, "yolov5n3");
  torch::NoGradGuard no_grad;
  const torch::Tensor images = torch::rand({1, 3, 128, 192});
  EXPECT_LT(largest_relative_difference(theirs.forward(images), model->decode(model->forward(images))), 1e-4);
}

// Ultralytics' layout [1, 4 + nc, N]: the anchor-free head's decoding (DFL, dist2bbox) and, in
// YOLO11, C3k2 and C2PSA's attention, each read back by OpenCV as Kestrel computes them.
TEST(OnnxExport, BuiltInUltralyticsModelsOfThreeClassesMatchKestrel) {
  for (const std::string name : {"yolov8n.yaml", "yolo11n.yaml", "yolov5nu.yaml"}) {
    DetectionModel model = inference_model(load_model_config(name).text, name, 3);
    const OnnxExport onnx = export_onnx(*model, 128, 192);
    EXPECT_EQ(onnx.output_shape, (std::vector<int64_t>{1, 4 + 3, 16 * 24 + 8 * 12 + 4 * 6})) << name;
    OpenCvOnnxModel theirs = write_and_read(onnx, name);
    torch::NoGradGuard no_grad;
    torch::manual_seed(5);
    const torch::Tensor images = torch::rand({1, 3, 128, 192});
    const torch::Tensor ours = model->decode(model->forward(images)).transpose(1, 2);
    const torch::Tensor got = theirs.forward(images);
    ASSERT_EQ(got.sizes(), ours.sizes()) << name;
    EXPECT_LT(largest_relative_difference(got, ours.contiguous()), 1e-4) << name;
    EXPECT_GT(ours.select(1, 2).max().item<float>(), 10.f) << name;  // widths in pixels
  }
}

// A pruned model exports with its cut widths: C2f/C3k2 halves of different sizes, YOLO11's
// narrower depthwise steps.
TEST(OnnxExport, PrunedUltralyticsModelsMatchKestrel) {
  for (const std::string name : {"yolov8n.yaml", "yolo11n.yaml"}) {
    torch::manual_seed(6);
    DetectionModel model(load_model_config(name), 3);
    for (auto& p : model->named_parameters())
      if (p.key().find("bn.weight") != std::string::npos) p.value().data().uniform_(0.1, 1.0);
    const std::shared_ptr<DetectionModelImpl> pruned = prune_channels(*model, PruneOptions{}).model;
    int uneven = 0;
    for (size_t i = 0; i < pruned->num_layers(); ++i)
      if (const auto* c2f = dynamic_cast<const C2fImpl*>(pruned->layer(i).get())) uneven += c2f->halves()[0] != c2f->halves()[1];
    EXPECT_GT(uneven, 0) << name;
    prepare_for_inference(*pruned, torch::kCPU);
    OpenCvOnnxModel theirs = write_and_read(export_onnx(*pruned, 128, 192), "pruned_" + name);
    torch::NoGradGuard no_grad;
    const torch::Tensor images = torch::rand({1, 3, 128, 192});
    const torch::Tensor ours = pruned->decode(pruned->forward(images)).transpose(1, 2).contiguous();
    EXPECT_LT(largest_relative_difference(theirs.forward(images), ours), 1e-4) << name;
  }
}

TEST(OnnxExport, RefusesSizesOffTheStride) {
  DetectionModel model = inference_model(kSmallYaml, "small.yaml", 2);
  EXPECT_THROW(export_onnx(*model, 100, 160), std::invalid_argument);
}

TEST(OnnxExport, NamesMetadataIsPythonsDict) {
  EXPECT_EQ(python_names_dict({"person", "it's", "a\\b"}), "{0: 'person', 1: \"it's\", 2: 'a\\\\b'}");
  EXPECT_EQ(python_names_dict({}), "{}");
}

// detect.py --weights yolov5n.onnx letterboxes to the full export shape; on that same input the
// ONNX model through OpenCV must give Kestrel's detections: same count, classes, boxes within the
// 1 px of rounding, confidences within 1e-4.
TEST(OnnxExport, Yolov5nDetectionsThroughOpenCvAreKestrels) {
  KESTREL_REQUIRE_SHARED(weights, "weights/yolov5n.pt");
  KESTREL_REQUIRE_SHARED(images, "data/coco128/images/train2017");
  torch::set_num_threads(2);
  DetectionModel model = load_inference_model(weights, "", torch::kCPU);
  OpenCvOnnxModel theirs = write_and_read(export_onnx(*model, 640, 640), "yolov5n");
  std::vector<std::string> files = list_image_files({images});
  files.resize(16);
  int64_t total = 0;
  double largest_output = 0, largest_box = 0, largest_conf = 0;
  torch::NoGradGuard no_grad;
  for (const auto& path : files) {
    const cv::Mat image = decode_image(path);
    const torch::Tensor input = image_to_input(image, 640, 640, /*auto_pad=*/false, 32, torch::kCPU);
    const torch::Tensor ours_raw = model->decode(model->forward(input));
    const torch::Tensor theirs_raw = theirs.forward(input);
    largest_output = std::max(largest_output, largest_relative_difference(theirs_raw, ours_raw));
    const torch::Tensor ours = detections_from_output(ours_raw, predict_nms_options(), 640, 640, image.rows, image.cols);
    const torch::Tensor got = detections_from_output(theirs_raw, predict_nms_options(), 640, 640, image.rows, image.cols);
    ASSERT_EQ(got.size(0), ours.size(0)) << path;
    total += ours.size(0);
    for (int64_t i = 0; i < ours.size(0); ++i) {
      // The row of the same class with the nearest box (two near-equal confidences may swap order).
      const torch::Tensor distance = (got.slice(1, 0, 4) - ours[i].slice(0, 0, 4)).abs().amax(1) +
                                     1e6 * (got.select(1, 5) != ours[i][5]).to(torch::kFloat);
      const int64_t j = distance.argmin().item<int64_t>();
      largest_box = std::max(largest_box, static_cast<double>(distance[j].item<float>()));
      largest_conf = std::max(largest_conf, std::abs(got[j][4].item<double>() - ours[i][4].item<double>()));
    }
  }
  std::cout << total << " detections on " << files.size() << " images, each found through OpenCV dnn; largest differences: output "
            << largest_output << " (relative), box " << largest_box << " px, confidence " << largest_conf << "\n";
  EXPECT_GT(total, 30);  // yolov5n finds 46 objects at conf 0.25 in these images
  EXPECT_LT(largest_output, 1e-3);
  EXPECT_LE(largest_box, 1.0);  // boxes are rounded to whole pixels
  EXPECT_LT(largest_conf, 1e-4);
}

}  // namespace
}  // namespace kestrel
