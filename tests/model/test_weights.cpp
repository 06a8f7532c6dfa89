// train.py's model rules: the data's nc overrides the yaml's, tensors transfer by name and shape
// (anchors only without --cfg), a Kestrel checkpoint rebuilds its own nc and names and gives its
// EMA weights, older checkpoints without an nc field read as one class per name, and a checkpoint of
// Ultralytics' trainer runs as it runs in Ultralytics.
#include <gtest/gtest.h>

#include "model/model_config.h"
#include "test_support.h"
#include "torch_support.h"
#include "model/checkpoint.h"
#include "model/weights.h"

namespace kestrel {
namespace {

// A Kestrel checkpoint of a yolov5n with `nc` classes whose EMA differs from its model weights.
std::string save_nano_checkpoint(const std::string& dir, int nc) {
  const ModelConfig config = load_model_config("yolov5n.yaml");
  DetectionModel model(config, nc), ema(config, nc);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : ema->parameters()) p.add_(1.0);
  }
  CheckpointMeta meta;
  meta.model_yaml = config.text;  // says nc: 80, as the yaml the run started from
  meta.nc = nc;
  for (int c = 0; c < nc; ++c) meta.names.push_back("thing" + std::to_string(c));
  const std::string path = dir + "/best.pt";
  save_checkpoint(path, meta, *model, ema.get(), nullptr);
  return path;
}

TEST(Weights, DataClassCountOverridesTheYaml) {
  const BuiltModel b = build_model("yolov5n.yaml", "", 3);
  EXPECT_EQ(b.model->nc(), 3);
  EXPECT_EQ(b.yaml_nc, 80);
  EXPECT_EQ(b.model->no(), 8);
  EXPECT_EQ(describe_build(b, ""), "Overriding model.yaml nc=80 with nc=3\n");
  EXPECT_EQ(b.model->names(), (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(describe_build(build_model("yolov5n.yaml", "", 80), ""), "");
}

// A best.pt as Ultralytics' trainer leaves it (reference/ultralytics/tiny_best.pt: its pickled
// DetectionModel of ultralytics.nn classes, fp16 EMA weights, a 2-class model with C2f, C3k2, SPPF and
// C2PSA): Kestrel rebuilds the model from the yaml it carries, takes its names, computes what
// Ultralytics computes with it, and fine-tunes it onto another class count as Ultralytics transfers.
TEST(Weights, UltralyticsTrainerCheckpointRunsAsInUltralytics) {
  const std::string path = std::string(KESTREL_TESTDATA_DIR) + "/reference/ultralytics/tiny_best.pt";
  const auto& ref = test::reference("ultralytics/tiny_best.json");
  const WeightsSource src = read_weights(path);
  EXPECT_TRUE(src.config.ultralytics);
  EXPECT_EQ(src.config.nc, 2);
  EXPECT_EQ(src.config.scale, "t");
  EXPECT_EQ(src.names, (std::vector<std::string>{"crack", "hole"}));

  const BuiltModel same = build_model("", path, 0);
  EXPECT_EQ(same.transferred, same.total);  // every tensor of the file has its place
  DetectionModel model = load_inference_model(path, "", torch::kCPU);  // fused, as Kestrel runs it
  EXPECT_EQ(model->names(), src.names);
  torch::NoGradGuard no_grad;
  const torch::Tensor ours = model->decode(model->forward(test::fixed_input(64, 96))).transpose(1, 2);
  const torch::Tensor want = test::json_tensor(ref.at("eval").at("decoded"));
  ASSERT_EQ(ours.sizes(), want.sizes());
  // Judged as the forward vectors are (test_ultralytics_models.cpp): against how far Ultralytics' own
  // float32 is from its float64 here, which the fill's gains and DFL's softmax make reach ~5e-3.
  const auto error = [](const torch::Tensor& a, const torch::Tensor& b) {
    return (a - b).abs().max().item<double>() / std::max(1.0, b.abs().max().item<double>());
  };
  const auto& fp32 = ref.at("fp32_error");
  EXPECT_LT(error(ours.slice(1, 0, 4), want.slice(1, 0, 4)), std::max(1e-4, 4 * fp32.at("eval_decoded_xywh").get<double>()));
  EXPECT_LT(error(ours.slice(1, 4), want.slice(1, 4)), std::max(1e-4, 4 * fp32.at("eval_decoded_scores").get<double>()));

  const BuiltModel three = build_model("", path, 3);  // all but the class branches' last convolutions
  EXPECT_EQ(describe_build(three, path), "Overriding model.yaml nc=2 with nc=3\nTransferred " +
                                             std::to_string(three.total - 4) + "/" + std::to_string(three.total) + " items from " + path + "\n");
}

TEST(Weights, KestrelCheckpointKeepsItsClassesAndGivesEmaWeights) {
  const std::string path = save_nano_checkpoint(test::temp_dir("weights"), 3);
  const WeightsSource src = read_weights(path);
  EXPECT_EQ(src.config.nc, 3);
  ASSERT_EQ(src.names.size(), 3u);

  // Same class count (val, detect): everything transfers, names and EMA weights come along.
  const BuiltModel same = build_model("", path, 0);
  EXPECT_EQ(same.model->nc(), 3);
  EXPECT_EQ(same.transferred, same.total);
  EXPECT_EQ(same.model->names(), src.names);
  const ModelConfig config = load_model_config("yolov5n.yaml");
  DetectionModel plain(config, 3);
  const torch::Tensor w = same.model->state().find("model.0.conv.weight");
  const torch::Tensor w0 = plain->state().find("model.0.conv.weight");
  EXPECT_GT(w.min().item<double>(), 0.5);  // the +1 of the EMA, not a fresh init
  EXPECT_GT((w - w0).abs().max().item<double>(), 0.5);

  // Onto 1-class data: all but the Detect convolutions (3 levels x weight and bias).
  const BuiltModel one = build_model("", path, 1);
  EXPECT_EQ(one.model->nc(), 1);
  EXPECT_EQ(one.transferred, one.total - 6);
  EXPECT_EQ(describe_build(one, path), "Overriding model.yaml nc=3 with nc=1\nTransferred " +
                                           std::to_string(one.total - 6) + "/" + std::to_string(one.total) + " items from " +
                                           path + "\n");
  EXPECT_EQ(one.model->names(), (std::vector<std::string>{"0"}));  // the caller gives the data's names

  // --cfg brings its own anchors: they are not transferred.
  const BuiltModel cfg = build_model("yolov5n.yaml", path, 3);
  EXPECT_EQ(cfg.transferred, cfg.total - 1);
  EXPECT_EQ(cfg.yaml_nc, 80);

  const BuiltModel arch = checkpoint_architecture(path);
  EXPECT_EQ(arch.model->nc(), 3);
  EXPECT_EQ(arch.model->names(), src.names);
}

TEST(Weights, CheckpointWithoutNcFieldReadsOneClassPerName) {
  // A checkpoint as Kestrel wrote them before the nc field: the class count is the number of names.
  const ModelConfig config = load_model_config("yolov5n.yaml");
  DetectionModel model(config, 5);
  const nlohmann::json meta = {{"kestrel_checkpoint", 1}, {"epoch", 3}, {"best_fitness", 0.5}, {"ema_updates", 0},
                               {"model_yaml", config.text}, {"names", {"a", "b", "c", "d", "e"}},
                               {"train_options", nlohmann::json::object()}, {"date", "2026-01-01T00:00:00"},
                               {"has_ema", false}, {"has_optimizer", false}};
  torch::serialize::OutputArchive root, model_archive;
  model->save(model_archive);
  root.write("meta", c10::IValue(meta.dump()));
  root.write("model", model_archive);
  const std::string path = test::temp_dir("weights") + "/old.pt";
  root.save_to(path);
  EXPECT_EQ(load_checkpoint(path, nullptr, nullptr, nullptr).nc, 5);
  const BuiltModel b = build_model("", path, 0);
  EXPECT_EQ(b.model->nc(), 5);
  EXPECT_EQ(b.transferred, b.total);
}

TEST(Weights, MissingOrGarbageWeightsNameTheFile) {
  const std::string dir = test::temp_dir("weights");
  try {
    build_model("", dir + "/absent.pt", 3);
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("absent.pt"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kestrel
