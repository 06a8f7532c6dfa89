// bbox_iou (element-wise IoU/GIoU/DIoU/CIoU) against YOLOv5 v7.0 reference values and gradients
// (tests/testdata/reference/boxes_iou.json).
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "eval/bbox_iou.h"
#include "torch_support.h"

namespace kestrel {
namespace {

using test::json_tensor;
using test::reference;

constexpr int64_t kTinyBoxRow = 48;  // 0.01-wide boxes: gradients ~60, README allows abs 1e-5

// |actual - expected| <= abs_tol + rel_tol*|expected| element-wise; rows of the leading dim that
// hold the tiny boxes get the looser absolute tolerance.
void expect_close(const torch::Tensor& actual, const torch::Tensor& expected, const std::string& what) {
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  const auto a = actual.to(torch::kFloat64).reshape({actual.size(0), -1});
  const auto e = expected.to(torch::kFloat64).reshape({expected.size(0), -1});
  int failures = 0;
  for (int64_t r = 0; r < a.size(0); ++r) {
    const double abs_tol = r == kTinyBoxRow ? 1e-5 : 1e-6;
    for (int64_t c = 0; c < a.size(1); ++c) {
      const double av = a[r][c].item<double>(), ev = e[r][c].item<double>();
      if (std::abs(av - ev) > abs_tol + 1e-4 * std::abs(ev) && ++failures <= 5)
        ADD_FAILURE() << what << " row " << r << " col " << c << ": " << av << " vs " << ev;
    }
  }
  EXPECT_EQ(failures, 0) << what;
}

const std::pair<const char*, IouKind> kKinds[] = {
    {"iou", IouKind::IoU}, {"giou", IouKind::GIoU}, {"diou", IouKind::DIoU}, {"ciou", IouKind::CIoU}};

TEST(BboxIou, XywhValuesAndGradientsMatchYolov5) {
  const auto& ref = reference("boxes_iou.json");
  for (const auto& [name, kind] : kKinds) {
    SCOPED_TRACE(name);
    const auto box1 = json_tensor(ref["inputs"]["box1"]).requires_grad_(true);
    const auto box2 = json_tensor(ref["inputs"]["box2"]).requires_grad_(true);
    const auto iou = bbox_iou(box1, box2, kind);
    EXPECT_EQ(iou.dtype(), torch::kFloat32);
    expect_close(iou.detach(), json_tensor(ref["outputs"][name]), std::string(name) + " values");
    iou.sum().backward();
    const std::string n(name);
    expect_close(box1.grad(), json_tensor(ref["outputs"][n + "_grad_box1"]), n + " grad box1");
    expect_close(box2.grad(), json_tensor(ref["outputs"][n + "_grad_box2"]), n + " grad box2");
  }
}

TEST(BboxIou, CornerModeAddsEpsToHeightOnly) {
  const auto& ref = reference("boxes_iou.json");
  const auto to_corners = [](const torch::Tensor& b) {
    const auto xy = b.slice(1, 0, 2), half = b.slice(1, 2, 4) / 2;
    return torch::cat({xy - half, xy + half}, 1);
  };
  const auto box1 = to_corners(json_tensor(ref["inputs"]["box1"]));
  const auto box2 = to_corners(json_tensor(ref["inputs"]["box2"]));
  for (const auto& [name, kind] : kKinds) {
    const std::string n = std::string(name) + "_xyxy";
    expect_close(bbox_iou(box1, box2, kind, /*xywh=*/false), json_tensor(ref["outputs"][n]), n);
  }
}

TEST(BboxIou, CiouAlphaIsConstantInBackward) {
  // Two boxes with different aspect ratios: if alpha were differentiated, d/dw would change.
  const auto box1 = torch::tensor({{0.f, 0.f, 2.f, 1.f}}).requires_grad_(true);
  const auto box2 = torch::tensor({{0.f, 0.f, 1.f, 2.f}});
  bbox_iou(box1, box2, IouKind::CIoU).sum().backward();
  const auto grad = box1.grad().clone();

  // Same quantity with alpha recomputed as a plain (differentiated) expression.
  const auto b1 = box1.detach().clone().requires_grad_(true);
  const auto iou = bbox_iou(b1, box2, IouKind::IoU);
  const auto diou = bbox_iou(b1, box2, IouKind::DIoU);
  const auto v = 4 / (M_PI * M_PI) *
                 (torch::atan(box2.select(1, 2) / box2.select(1, 3)) -
                  torch::atan(b1.select(1, 2) / b1.select(1, 3)))
                     .pow(2);
  const auto alpha = v / (v - iou + (1 + 1e-7));
  (diou - v * alpha).sum().backward();
  EXPECT_GT((grad - b1.grad()).abs().max().item<double>(), 1e-4);
}

}  // namespace
}  // namespace kestrel
