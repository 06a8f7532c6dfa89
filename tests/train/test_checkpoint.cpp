// Checkpoint round trip (model, EMA, optimizer state, metadata), stripping, and atomic writes.
#include <unistd.h>

#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "test_support.h"
#include "model/checkpoint.h"
#include "train/ema.h"
#include "train/optimizer.h"
#include "core/atomic_file.h"

namespace kestrel {
namespace {

namespace nn = torch::nn;
namespace fs = std::filesystem;

std::shared_ptr<nn::SequentialImpl> tiny_model() {
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(3, 4, 3).bias(false)), nn::BatchNorm2d(4),
                        nn::Conv2d(nn::Conv2dOptions(4, 2, 1)))
      .ptr();
}

// One SGD step on a fixed input (train mode, so BN running stats move too).
void train_step(nn::SequentialImpl& model, torch::optim::Optimizer& opt) {
  torch::manual_seed(7);
  const torch::Tensor x = torch::randn({2, 3, 6, 6});
  opt.zero_grad();
  model.forward(x).square().mean().backward();
  opt.step();
}

void expect_same_state(const nn::Module& a, const nn::Module& b) {
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (const auto& p : pa) EXPECT_TRUE(torch::equal(p.value(), pb[p.key()])) << p.key();
  const auto ba = a.named_buffers(), bb = b.named_buffers();
  ASSERT_EQ(ba.size(), bb.size());
  for (const auto& x : ba) EXPECT_TRUE(torch::equal(x.value(), bb[x.key()])) << x.key();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

CheckpointMeta sample_meta() {
  CheckpointMeta meta;
  meta.epoch = 7;
  meta.best_fitness = 0.4321;
  meta.ema_updates = 3;
  meta.model_yaml = "nc: 2\nbackbone: []\n";
  meta.names = {"person", "bicycle \xc3\xa9"};
  meta.train_options = {{"epochs", 30}, {"batch_size", 16}, {"cos_lr", false}};
  return meta;
}

TEST(Checkpoint, RoundTripRestoresEverything) {
  auto model = tiny_model();
  auto opt = smart_optimizer(*model, OptimizerKind::SGD, 0.01, 0.937, 0.0005);
  ModelEMA ema(tiny_model(), *model);
  for (int k = 0; k < 3; ++k) {
    train_step(*model, *opt);
    ema.update(*model);
  }
  const std::string path = test::temp_dir("ckpt") + "/last.pt";
  save_checkpoint(path, sample_meta(), *model, &ema.module(), opt.get());
  EXPECT_FALSE(fs::exists(path + ".tmp." + std::to_string(getpid())));

  auto model2 = tiny_model();
  auto opt2 = smart_optimizer(*model2, OptimizerKind::SGD, 0.5, 0.5, 0.5);
  auto ema2 = tiny_model();
  const CheckpointMeta meta = load_checkpoint(path, model2.get(), ema2.get(), opt2.get());
  EXPECT_EQ(meta.epoch, 7);
  EXPECT_EQ(meta.best_fitness, 0.4321);
  EXPECT_EQ(meta.ema_updates, 3);
  EXPECT_EQ(meta.model_yaml, sample_meta().model_yaml);
  EXPECT_EQ(meta.names, sample_meta().names);
  EXPECT_EQ(meta.train_options, sample_meta().train_options);
  EXPECT_FALSE(meta.date.empty());
  EXPECT_TRUE(meta.has_ema && meta.has_optimizer);
  expect_same_state(*model, *model2);
  expect_same_state(ema.module(), *ema2);
  EXPECT_EQ(group_lrs(*opt2), group_lrs(*opt));

  // Same optimizer state (momentum buffers, options): one more identical step stays identical.
  train_step(*model, *opt);
  train_step(*model2, *opt2);
  expect_same_state(*model, *model2);
}

TEST(Checkpoint, MetadataOnlyAndMissingParts) {
  auto model = tiny_model();
  const std::string path = test::temp_dir("ckpt") + "/best.pt";
  save_checkpoint(path, sample_meta(), *model, nullptr, nullptr);
  const CheckpointMeta meta = load_checkpoint(path, nullptr, nullptr, nullptr);
  EXPECT_FALSE(meta.has_ema);
  EXPECT_FALSE(meta.has_optimizer);
  auto ema = tiny_model();
  EXPECT_THROW(load_checkpoint(path, nullptr, ema.get(), nullptr), std::runtime_error);
  auto other = nn::Sequential(nn::Conv2d(nn::Conv2dOptions(3, 8, 3))).ptr();
  EXPECT_THROW(load_checkpoint(path, other.get(), nullptr, nullptr), std::runtime_error);
  std::ofstream(path + ".junk") << "not a checkpoint";
  EXPECT_THROW(load_checkpoint(path + ".junk", nullptr, nullptr, nullptr), std::runtime_error);
}

TEST(Checkpoint, StripKeepsEmaWeightsOnly) {
  auto model = tiny_model();
  auto opt = smart_optimizer(*model, OptimizerKind::SGD, 0.01, 0.937, 0.0005);
  ModelEMA ema(tiny_model(), *model);
  train_step(*model, *opt);
  ema.update(*model);
  const std::string path = test::temp_dir("ckpt") + "/best.pt";
  save_checkpoint(path, sample_meta(), *model, &ema.module(), opt.get());
  const auto size_before = fs::file_size(path);
  auto scratch = tiny_model();
  strip_checkpoint(path, *scratch);
  EXPECT_LT(fs::file_size(path), size_before);
  auto loaded = tiny_model();
  const CheckpointMeta meta = load_checkpoint(path, loaded.get(), nullptr, nullptr);
  EXPECT_EQ(meta.epoch, -1);
  EXPECT_FALSE(meta.has_ema || meta.has_optimizer);
  EXPECT_EQ(meta.names, sample_meta().names);
  expect_same_state(*loaded, ema.module());
}

TEST(Checkpoint, GradientsOfAnUnfinishedWindowRoundTrip) {
  auto model = tiny_model();
  torch::manual_seed(3);
  model->forward(torch::randn({2, 3, 6, 6})).square().mean().backward();  // a backward, no step yet
  const std::string path = test::temp_dir("ckpt") + "/last.pt";
  save_checkpoint(path, sample_meta(), *model, nullptr, nullptr, /*with_grads=*/true);
  EXPECT_TRUE(load_checkpoint(path, nullptr, nullptr, nullptr).has_grads);
  auto loaded = tiny_model();
  load_checkpoint(path, loaded.get(), nullptr, nullptr);
  ASSERT_TRUE(load_gradients(path, *loaded));
  const auto a = model->parameters(), b = loaded->parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(b[i].grad().defined()) << i;
    EXPECT_TRUE(torch::equal(a[i].grad(), b[i].grad())) << i;
    EXPECT_FALSE(b[i].grad().requires_grad());
  }
  save_checkpoint(path, sample_meta(), *model, nullptr, nullptr);  // without: nothing to restore
  EXPECT_FALSE(load_checkpoint(path, nullptr, nullptr, nullptr).has_grads);
  EXPECT_FALSE(load_gradients(path, *loaded));
}

TEST(Checkpoint, FailedWriteLeavesOldFileIntact) {
  const std::string dir = test::temp_dir("ckpt");
  const std::string path = dir + "/last.pt";
  auto model = tiny_model();
  save_checkpoint(path, sample_meta(), *model, nullptr, nullptr);
  const std::string old_bytes = read_file(path);
  const std::string big(1 << 20, 'x');

  // A write that fails half way (file size limit): the old file survives, no .tmp is left.
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = saved;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  EXPECT_THROW(write_file_atomic(path, big), std::runtime_error);
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(read_file(path), old_bytes);
  EXPECT_FALSE(fs::exists(path + ".tmp." + std::to_string(getpid())));

  // The temporary cannot even be created: same guarantee.
  fs::create_directory(path + ".tmp." + std::to_string(getpid()));
  EXPECT_THROW(write_file_atomic(path, big), std::runtime_error);
  EXPECT_EQ(read_file(path), old_bytes);
  fs::remove(path + ".tmp." + std::to_string(getpid()));

  // A successful write replaces the file completely.
  write_file_atomic(path, big);
  EXPECT_EQ(read_file(path), big);
  EXPECT_FALSE(fs::exists(path + ".tmp." + std::to_string(getpid())));
}

}  // namespace
}  // namespace kestrel
