// Model statistics against the reference: per-layer params and GFLOPs, layer counts, summary
// lines (plain and fused) and the parse_model table.
#include <gtest/gtest.h>

#include "model/model_info.h"
#include "test_support.h"

namespace kestrel {
namespace {

const char* const kModels[] = {"n", "s", "m", "l", "x"};

// Test binaries share two cores: with one intra-op thread nothing spin-waits in OpenMP, which
// made these tests ~50x slower under contention.
const bool kSingleThreaded = (torch::set_num_threads(1), true);

std::string expected_line(const std::string& name, const nlohmann::json& summary) {
  return name + " summary: " + std::to_string(summary["layers"].get<int64_t>()) + " layers, " +
         std::to_string(summary["parameters"].get<int64_t>()) + " parameters, " +
         std::to_string(summary["gradients"].get<int64_t>()) + " gradients, " +
         summary["gflops_printed"].get<std::string>() + " GFLOPs";
}

TEST(ModelInfo, ReferenceFiguresForAllFiveModelsPlainAndFused) {
  for (const char* v : kModels) {
    SCOPED_TRACE(std::string("yolov5") + v);
    const auto& ref = test::reference(std::string("model_yolov5") + v + ".json");
    DetectionModel model(load_model_config(std::string("yolov5") + v));
    const auto params = layer_params(*model);
    const auto gflops = layer_gflops(*model);
    ASSERT_EQ(params.size(), ref["layers"].size());
    for (size_t i = 0; i < params.size(); ++i) {
      const auto& r = ref["layers"][i];
      EXPECT_EQ(params[i], r["params"].get<int64_t>()) << "layer " << i;
      EXPECT_NEAR(gflops[i], r["gflops_640"].get<double>(), 1e-9 * r["gflops_640"].get<double>())
          << "layer " << i;
    }
    const ModelSummary s = model_summary(*model);
    EXPECT_EQ(s.name, std::string("YOLOv5") + v);
    EXPECT_EQ(s.parameters, ref["total_params"].get<int64_t>());
    EXPECT_NEAR(s.gflops, ref["gflops_640"].get<double>(), 1e-9 * s.gflops);
    EXPECT_EQ(s.line(), expected_line(s.name, ref["summary"]));

    model->fuse();
    const ModelSummary f = model_summary(*model);
    const auto& fref = ref["fused"];
    EXPECT_EQ(f.parameters, fref["total_params"].get<int64_t>());
    EXPECT_NEAR(f.gflops, fref["gflops_640_rules"].get<double>(), 1e-9 * f.gflops);
    EXPECT_EQ(f.line(), expected_line(f.name, fref["summary"]));
  }
}

TEST(ModelInfo, GflopsScaleWithImageSize) {
  DetectionModel model(load_model_config("yolov5n"));
  const double at640 = model_summary(*model).gflops;
  EXPECT_NEAR(model_summary(*model, 320).gflops, at640 / 4, 1e-12 * at640);
}

TEST(ModelInfo, LayerTableLooksLikeParseModelLog) {
  DetectionModel model(load_model_config("yolov5n.yaml"));
  const std::string table = layer_table(*model);
  std::vector<std::string> lines;
  for (size_t pos = 0, next; pos < table.size(); pos = next + 1) {
    next = table.find('\n', pos);
    lines.push_back(table.substr(pos, next - pos));
  }
  ASSERT_EQ(lines.size(), 26u);
  EXPECT_EQ(lines[0].substr(0, 36), "                 from  n    params  ");
  const std::string stem_row =
      "  0                -1  1      1760  models.common.Conv                      [3, 16, 6, 2, 2]";
  EXPECT_EQ(lines[1].substr(0, stem_row.size()), stem_row);
  EXPECT_NE(lines[13].find("[-1, 6]  1         0  models.common.Concat"), std::string::npos)
      << lines[13];
  EXPECT_NE(lines[25].find("[17, 20, 23]  1    115005  models.yolo.Detect"), std::string::npos)
      << lines[25];
  EXPECT_NE(lines[12].find("[None, 2, 'nearest']"), std::string::npos) << lines[12];
}

}  // namespace
}  // namespace kestrel
