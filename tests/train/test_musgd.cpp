// MuSGD against Ultralytics' own (reference/ultralytics/musgd.json, make_vectors.py): Newton-Schulz,
// three optimizer steps over Muon and SGD groups, the eight groups build_optimizer makes of yolov8n and
// yolo11n, and a checkpoint round trip of the optimizer's state.
#include <map>
#include <sstream>

#include "model/detection_model.h"
#include "model/model_config.h"
#include "test_support.h"
#include "train/musgd.h"
#include "train/optimizer.h"

namespace kestrel {
namespace {

const nlohmann::json& vectors() { return test::reference("ultralytics/musgd.json"); }

torch::Tensor from_json(const nlohmann::json& t) {
  const std::vector<float> v = test::json_floats(t);
  return torch::tensor(v).reshape(test::json_shape(t));
}

// Largest difference relative to the reference's largest magnitude.
double relative_max_error(const torch::Tensor& got, const torch::Tensor& want) {
  return ((got - want).abs().max() / want.abs().max()).item<double>();
}

// bf16 keeps 8 significant bits: Ultralytics' own bf16 result is only pinned to about 2^-8 of its
// scale, and a CPU with other bf16 matrix kernels rounds differently.
constexpr double kBf16Tolerance = 1.0 / 64;

TEST(MuSGD, NewtonSchulzMatchesUltralytics) {
  for (const auto& c : vectors().at("newton_schulz")) {
    const torch::Tensor got = newton_schulz5(from_json(c.at("input")));
    EXPECT_EQ(got.scalar_type(), torch::kBFloat16);
    const torch::Tensor want = from_json(c.at("output"));
    EXPECT_EQ(got.sizes(), want.sizes());
    EXPECT_LT(relative_max_error(got.to(torch::kFloat), want), kBf16Tolerance) << c.at("input").at("shape");
  }
}

// The optimizer of the vectors' groups, the parameters at their initial values.
struct VectorOptimizer {
  std::vector<std::vector<torch::Tensor>> params;  // per group, the frozen one last in group 0
  std::unique_ptr<MuSGD> optimizer;
};

VectorOptimizer build_vector_optimizer() {
  VectorOptimizer s;
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (const auto& g : vectors().at("groups")) {
    std::vector<torch::Tensor> ps;
    for (const auto& t : g.at("initial")) ps.push_back(from_json(t).requires_grad_(true));
    if (g.contains("frozen")) ps.push_back(from_json(g.at("frozen")));
    MuSGDOptions o(g.at("lr").get<double>());
    o.momentum(0.9).nesterov(true).use_muon(g.at("use_muon").get<bool>()).weight_decay(g.at("weight_decay").get<double>());
    s.params.push_back(ps);
    groups.emplace_back(ps, std::make_unique<MuSGDOptions>(o));
  }
  s.optimizer = std::make_unique<MuSGD>(groups, MuSGDOptions(0.01));
  return s;
}

// Sets the step's gradients, lr and momentum as the generator did, then steps.
void run_step(VectorOptimizer& s, const nlohmann::json& step) {
  const auto& groups = vectors().at("groups");
  for (size_t g = 0; g < s.params.size(); ++g) {
    auto& o = static_cast<MuSGDOptions&>(s.optimizer->param_groups()[g].options());
    o.lr(groups[g].at("lr").get<double>() * step.at("lr_factor").get<double>()).momentum(step.at("momentum").get<double>());
    const auto& grads = step.at("grads")[g];
    for (size_t i = 0; i < grads.size(); ++i) s.params[g][i].mutable_grad() = from_json(grads[i]);
  }
  s.optimizer->step();
}

// Each parameter's move over the step, against Ultralytics': the SGD-only groups to float rounding,
// the Muon groups to bf16's (their moves are mostly the orthogonalized update).
void expect_step_matches(const VectorOptimizer& s, const std::vector<std::vector<torch::Tensor>>& before, const nlohmann::json& after,
                         int step) {
  const auto& groups = vectors().at("groups");
  for (size_t g = 0; g < s.params.size(); ++g) {
    const double tolerance = groups[g].at("use_muon").get<bool>() ? kBf16Tolerance : 1e-6;
    for (size_t i = 0; i < after[g].size(); ++i) {
      const torch::Tensor want = from_json(after[g][i]) - before[g][i];
      EXPECT_LT(relative_max_error(s.params[g][i].detach() - before[g][i], want), tolerance)
          << "step " << step << ", group " << groups[g].at("name") << ", parameter " << i;
    }
  }
}

std::vector<std::vector<torch::Tensor>> snapshot(const VectorOptimizer& s) {
  std::vector<std::vector<torch::Tensor>> copy;
  for (const auto& g : s.params) {
    copy.emplace_back();
    for (const auto& p : g) copy.back().push_back(p.detach().clone());
  }
  return copy;
}

TEST(MuSGD, StepsMatchUltralytics) {
  VectorOptimizer s = build_vector_optimizer();
  const torch::Tensor frozen = s.params[0].back().clone();
  int n = 0;
  for (const auto& step : vectors().at("steps")) {
    const auto before = snapshot(s);
    run_step(s, step);
    expect_step_matches(s, before, step.at("after"), n++);
  }
  EXPECT_TRUE(torch::equal(s.params[0].back(), frozen)) << "a parameter without a gradient moved";
}

// An optimizer saved after one step and loaded into a fresh one takes the next step identically.
TEST(MuSGD, StateSurvivesACheckpoint) {
  VectorOptimizer a = build_vector_optimizer();
  run_step(a, vectors().at("steps")[0]);
  std::stringstream buffer;
  {
    torch::serialize::OutputArchive out;
    a.optimizer->save(out);
    out.save_to(buffer);
  }
  VectorOptimizer b = build_vector_optimizer();
  for (size_t g = 0; g < a.params.size(); ++g)
    for (size_t i = 0; i < a.params[g].size(); ++i) {
      torch::NoGradGuard no_grad;
      b.params[g][i].copy_(a.params[g][i]);
    }
  torch::serialize::InputArchive in;
  in.load_from(buffer);
  b.optimizer->load(in);
  const auto& o = static_cast<const MuSGDOptions&>(b.optimizer->param_groups()[0].options());
  EXPECT_DOUBLE_EQ(o.lr(), 0.01);
  EXPECT_DOUBLE_EQ(o.momentum(), 0.8);  // the step's, not the constructor's
  EXPECT_TRUE(o.use_muon());
  run_step(a, vectors().at("steps")[1]);
  run_step(b, vectors().at("steps")[1]);
  for (size_t g = 0; g < a.params.size(); ++g)
    for (size_t i = 0; i < a.params[g].size(); ++i) EXPECT_TRUE(torch::equal(a.params[g][i], b.params[g][i])) << g << "/" << i;
}

// BaseTrainer.build_optimizer(name="MuSGD") on the model with nc=3: each group's members in order, lr,
// weight decay and Muon flag.
TEST(MuSGD, GroupsMatchUltralyticsTrainer) {
  for (const std::string name : {"yolov8n", "yolo11n"}) {
    DetectionModel model(load_model_config(name + ".yaml"), 3);
    std::map<const void*, std::string> names;
    for (const auto& p : model->named_parameters()) names[p.value().unsafeGetTensorImpl()] = p.key();
    const auto optimizer = smart_optimizer(*model, OptimizerKind::MuSGD, 0.01, 0.9, 0.0005);
    const auto& want = vectors().at("groups_" + name);
    ASSERT_EQ(optimizer->param_groups().size(), want.size()) << name;
    for (size_t g = 0; g < want.size(); ++g) {
      const auto& group = optimizer->param_groups()[g];
      const auto& o = static_cast<const MuSGDOptions&>(group.options());
      std::vector<std::string> got;
      for (const auto& p : group.params()) got.push_back(names.at(p.unsafeGetTensorImpl()));
      EXPECT_EQ(got, want[g].at("params").get<std::vector<std::string>>()) << name << " group " << g;
      EXPECT_DOUBLE_EQ(o.lr(), want[g].at("lr").get<double>()) << name << " group " << g;
      EXPECT_DOUBLE_EQ(o.weight_decay(), want[g].at("weight_decay").get<double>()) << name << " group " << g;
      EXPECT_EQ(o.use_muon(), want[g].at("use_muon").get<bool>()) << name << " group " << g;
      EXPECT_TRUE(o.nesterov());
    }
  }
}

}  // namespace
}  // namespace kestrel
