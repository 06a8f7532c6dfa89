// ModelEMA against schedule.json `ema`: the decay ramp and a 3-update example on
// Sequential(Conv2d(2,2,1), BatchNorm2d(2)), parameters and buffers, num_batches_tracked untouched.
#include "torch_support.h"
#include "train/ema.h"

namespace kestrel {
namespace {

namespace nn = torch::nn;

const nlohmann::json& ema_ref() { return test::reference("schedule.json").at("ema"); }

std::shared_ptr<nn::SequentialImpl> tiny_model() {
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(2, 2, 1)), nn::BatchNorm2d(2)).ptr();
}

// Every parameter and buffer by state-dict name.
std::map<std::string, torch::Tensor> state(const nn::Module& m) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& p : m.named_parameters()) out[p.key()] = p.value();
  for (const auto& b : m.named_buffers()) out[b.key()] = b.value();
  return out;
}

torch::Tensor expected(const nlohmann::json& t) {
  return test::json_tensor(t, t.at("dtype") == "int64" ? torch::kInt64 : torch::kFloat32);
}

void load_state(nn::Module& m, const nlohmann::json& sd) {
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : state(m)) t.copy_(expected(sd.at(name)));
}

void expect_state(const nn::Module& m, const nlohmann::json& sd, const std::string& what) {
  const auto s = state(m);
  ASSERT_EQ(s.size(), sd.size()) << what;
  for (const auto& [name, t] : s) {
    const torch::Tensor want = expected(sd.at(name));
    ASSERT_EQ(t.sizes(), want.sizes()) << what << " " << name;
    ASSERT_EQ(t.scalar_type(), want.scalar_type()) << what << " " << name;
    // float32 arithmetic in YOLOv5's order reproduces every value exactly
    EXPECT_TRUE(torch::equal(t, want)) << what << " " << name << "\n got " << t << "\n want " << want;
  }
}

TEST(Ema, DecayRamp) {
  auto model = tiny_model();
  ModelEMA ema(tiny_model(), *model);
  for (const auto& [u, d] : ema_ref().at("decay").items())
    EXPECT_NEAR(ema.decay(std::stoll(u)), d.get<double>(), 1e-15 * d.get<double>()) << "u " << u;
}

TEST(Ema, ThreeUpdatesMatchYolov5) {
  const auto& ex = ema_ref().at("example");
  auto model = tiny_model();
  load_state(*model, ex.at("initial_state"));
  ModelEMA ema(tiny_model(), *model);  // the EMA copy starts from different random weights
  expect_state(ema.module(), ex.at("initial_state"), "EMA copy of the initial model");
  EXPECT_FALSE(ema.module().is_training());
  for (const auto& p : ema.module().parameters()) EXPECT_FALSE(p.requires_grad());

  int s = 0;
  for (const auto& step : ex.at("steps")) {
    {
      // The generator's change: parameter k += 0.1*(s+1)*(k+1); running_mean += 0.5;
      // running_var *= 1.5; num_batches_tracked += 1.
      torch::NoGradGuard no_grad;
      int k = 0;
      for (auto& p : model->parameters()) p.add_(0.1 * (s + 1) * (k++ + 1));
      auto sd = state(*model);
      sd.at("1.running_mean").add_(0.5);
      sd.at("1.running_var").mul_(1.5);
      sd.at("1.num_batches_tracked").add_(1);
    }
    expect_state(*model, step.at("model_state"), "model after change " + std::to_string(s));
    ema.update(*model);
    EXPECT_EQ(ema.updates(), step.at("updates").get<int64_t>());
    EXPECT_DOUBLE_EQ(ema.decay(ema.updates()), step.at("d").get<double>());
    expect_state(ema.module(), step.at("ema_state"), "EMA after update " + std::to_string(s));
    ++s;
  }
}

TEST(Ema, RejectsMismatchedModel) {
  auto model = tiny_model();
  auto other = nn::Sequential(nn::Conv2d(nn::Conv2dOptions(2, 3, 1))).ptr();
  EXPECT_THROW(ModelEMA(other, *model), std::runtime_error);
}

}  // namespace
}  // namespace kestrel
