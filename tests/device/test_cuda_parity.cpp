// CPU against CUDA for the pieces a training step runs on the GPU: the model's forward and backward,
// the loss, NMS, the fp16 loss scaler with autocast, MuSGD's steps, and a one-rank NCCL group. Every test skips on
// a machine without a GPU (the device check, scripts/device_check.sh, runs them on one). Tolerances:
// fp32 on both sides, but cuDNN's convolution algorithms sum in another order than oneDNN's, so the
// model is compared at rtol 1e-3 (yolov5n's outputs are O(1..100)) and its gradients at a relative
// norm error of 1e-3; loss and NMS are elementwise math and compare at 1e-5.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/hyp.h"
#include "device/device.h"
#include "distributed/process_group.h"
#include "eval/nms.h"
#include "model/detection_model.h"
#include "model/model_config.h"
#include "model/precision.h"
#include "profile/doctor_dist.h"
#include "train/grad_scaler.h"
#include "train/detection_loss.h"
#include "train/loss.h"
#include "train/optimizer.h"

namespace kestrel {
namespace {

#define SKIP_WITHOUT_CUDA() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device on this machine (the device check runs this)"

const torch::Device kGpu(torch::kCUDA, 0);

double relative_error(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a.cpu().to(torch::kDouble) - b.cpu().to(torch::kDouble)).norm() / (b.cpu().to(torch::kDouble).norm() + 1e-12)).item<double>();
}

torch::Tensor targets_for(int batch) {  // image, class, x, y, w, h (normalised)
  std::vector<float> t;
  for (int i = 0; i < batch; ++i) t.insert(t.end(), {float(i), float(i % 3), 0.4f, 0.5f, 0.3f, 0.2f, float(i), 1.0f, 0.7f, 0.3f, 0.1f, 0.15f});
  return torch::tensor(t).view({-1, 6});
}

// Each family's step: YOLOv5's anchor head and loss, and Ultralytics' DFL head with its task-aligned
// assigner (yolov8n's C2f, yolo11n's C3k2 and C2PSA attention).
class CudaStepParity : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaStepParity, ModelForwardBackwardAndLossMatchTheCpu) {
  SKIP_WITHOUT_CUDA();
  torch::manual_seed(0);
  DetectionModel cpu(load_model_config(GetParam()), 3);
  DetectionModel gpu(load_model_config(GetParam()), 3);
  torch::NoGradGuard copy_guard;
  {
    auto src = cpu->named_parameters(), dst = gpu->named_parameters();
    for (auto& p : src) dst[p.key()].copy_(p.value());
    auto sb = cpu->named_buffers(), db = gpu->named_buffers();
    for (auto& b : sb) db[b.key()].copy_(b.value());
  }
  gpu->to(kGpu);
  for (auto* m : {&cpu, &gpu}) (*m)->train(), (*m)->set_memory_format(torch::MemoryFormat::ChannelsLast);
  const torch::Tensor x = torch::rand({2, 3, 128, 128}).contiguous(torch::MemoryFormat::ChannelsLast);
  const torch::Tensor targets = targets_for(2);
  const Hyp hyp = cpu->config().ultralytics ? ultralytics_hyp() : Hyp{};
  auto run = [&](DetectionModel& m, const torch::Device& d) {
    torch::AutoGradMode grad(true);
    const DetectionLoss loss = make_detection_loss(*m, hyp, 128, d);
    std::vector<torch::Tensor> pred = m->forward(x.to(d));
    auto [l, items] = loss(pred, targets.to(d));
    l.backward();
    return std::make_pair(pred, l);
  };
  const auto [pc, lc] = run(cpu, torch::kCPU);
  const auto [pg, lg] = run(gpu, kGpu);
  for (size_t i = 0; i < pc.size(); ++i) EXPECT_LT(relative_error(pg[i], pc[i]), 1e-3) << "level " << i;
  EXPECT_NEAR(lg.item<double>(), lc.item<double>(), 1e-3 * std::abs(lc.item<double>()));
  auto gc = cpu->named_parameters(), gg = gpu->named_parameters();
  for (auto& p : gc)
    if (p.value().grad().defined()) EXPECT_LT(relative_error(gg[p.key()].grad(), p.value().grad()), 1e-3) << p.key();
}

INSTANTIATE_TEST_SUITE_P(Families, CudaStepParity, ::testing::Values("yolov5n.yaml", "yolov8n.yaml", "yolo11n.yaml"),
                         [](const auto& info) { return info.param.substr(0, info.param.find('.')); });

TEST(CudaParity, LossOnFixedPredictionsMatchesTheCpu) {
  SKIP_WITHOUT_CUDA();
  torch::manual_seed(1);
  DetectionModel m(load_model_config("yolov5n.yaml"), 3);
  std::vector<torch::Tensor> pred;
  for (int64_t s : {16, 8, 4}) pred.push_back(torch::randn({2, 3, s, s, 8}));
  Hyp hyp;
  YoloLoss cpu_loss(loss_config_from_hyp(hyp, 3, 3, 128, m->anchors()));
  YoloLoss gpu_loss(loss_config_from_hyp(hyp, 3, 3, 128, m->anchors().to(kGpu)));
  std::vector<torch::Tensor> pred_gpu;
  for (auto& p : pred) pred_gpu.push_back(p.to(kGpu));
  const auto [lc, ic] = cpu_loss(pred, targets_for(2));
  const auto [lg, ig] = gpu_loss(pred_gpu, targets_for(2).to(kGpu));
  EXPECT_TRUE(torch::allclose(ig.cpu(), ic, 1e-5, 1e-6)) << ig << ic;
}

TEST(CudaParity, NmsKeepsTheSameBoxes) {
  SKIP_WITHOUT_CUDA();
  torch::manual_seed(2);
  torch::Tensor pred = torch::rand({2, 500, 8});
  pred.slice(2, 0, 2).mul_(320), pred.slice(2, 2, 4).mul_(60).add_(4);
  for (NmsOptions o : {val_nms_options(), NmsOptions{}}) {
    const auto cpu = non_max_suppression(pred, o);
    const auto gpu = non_max_suppression(pred.to(kGpu), o);
    ASSERT_EQ(cpu.size(), gpu.size());
    for (size_t i = 0; i < cpu.size(); ++i) {
      ASSERT_EQ(gpu[i].sizes(), cpu[i].sizes()) << "image " << i;
      EXPECT_TRUE(torch::allclose(gpu[i].cpu(), cpu[i], 1e-5, 1e-4)) << "image " << i;
    }
  }
}

// fp16 autocast with the scaler: a finite step is taken with the gradients of fp32 (unscaled), and a
// step whose gradients overflow is skipped and halves the scale.
TEST(CudaParity, Fp16ScalerStepsAndSkipsOnTheGpu) {
  SKIP_WITHOUT_CUDA();
  torch::manual_seed(3);
  torch::nn::Linear lin(64, 64);
  lin->to(kGpu);
  torch::optim::SGD opt(lin->parameters(), torch::optim::SGDOptions(0.1));
  GradScaler scaler(true);
  const torch::Tensor x = torch::randn({32, 64}, torch::TensorOptions().device(kGpu));
  torch::Tensor loss;
  {
    Autocast autocast(Precision::fp16, kGpu);
    const torch::Tensor y = lin(x);
    EXPECT_EQ(y.scalar_type(), torch::kHalf);
    loss = y.to(torch::kFloat32).pow(2).mean();
  }
  scaler.scale(loss).backward();
  const torch::Tensor w_before = lin->weight.detach().clone();
  EXPECT_TRUE(scaler.step(opt, lin->parameters(), 10.0));
  EXPECT_FALSE(torch::equal(lin->weight, w_before));
  opt.zero_grad();
  const double scale = scaler.state().scale;
  (lin(x).sum() * std::numeric_limits<float>::infinity()).backward();
  const torch::Tensor w_kept = lin->weight.detach().clone();
  EXPECT_FALSE(scaler.step(opt, lin->parameters(), 10.0));
  EXPECT_TRUE(torch::equal(lin->weight, w_kept));
  EXPECT_DOUBLE_EQ(scaler.state().scale, scale * GradScaler::kBackoffFactor);
}

// One rank is a whole NCCL group: its all-reduce and broadcast leave the tensors as they are, on the
// GPU, and the backend is NCCL's.
TEST(CudaParity, OneRankNcclGroupReduces) {
  SKIP_WITHOUT_CUDA();
  World w;
  w.master_port = 29731;
  ProcessGroup group(w, std::chrono::milliseconds(60000), kGpu);
  EXPECT_EQ(group.backend(), "nccl");
  torch::Tensor t = torch::arange(8, torch::TensorOptions().dtype(torch::kFloat32).device(kGpu));
  group.all_reduce_sum(t);
  EXPECT_TRUE(torch::equal(t.cpu(), torch::arange(8).to(torch::kFloat32)));
  std::vector<torch::Tensor> b{t};
  group.broadcast(b);
  group.barrier();
  EXPECT_FALSE(nccl_version().empty());
}

// MuSGD's Muon and SGD steps on the GPU: two steps of yolov8n's eight groups on the same gradients as
// on the CPU. Newton-Schulz runs in bf16, whose matrix products round differently on each side, so the
// parameters' moves are compared at a relative norm error of 2%.
TEST(CudaParity, MuSGDStepsMatchTheCpu) {
  SKIP_WITHOUT_CUDA();
  DetectionModel cpu(load_model_config("yolov8n.yaml"), 3);
  DetectionModel gpu = cpu->copy();
  gpu->to(kGpu);
  auto cpu_opt = smart_optimizer(*cpu, OptimizerKind::MuSGD, 0.01, 0.9, 0.0005);
  auto gpu_opt = smart_optimizer(*gpu, OptimizerKind::MuSGD, 0.01, 0.9, 0.0005);
  const std::vector<torch::Tensor> start = cpu->parameters();
  std::vector<torch::Tensor> before;
  for (const auto& p : start) before.push_back(p.detach().clone());
  torch::manual_seed(3);
  for (int step = 0; step < 2; ++step) {
    auto c = cpu->parameters(), g = gpu->parameters();
    for (size_t i = 0; i < c.size(); ++i) {
      if (!c[i].requires_grad()) continue;
      c[i].mutable_grad() = torch::randn_like(c[i]) * 0.01;
      g[i].mutable_grad() = c[i].grad().to(kGpu);
    }
    cpu_opt->step();
    gpu_opt->step();
  }
  auto c = cpu->parameters(), g = gpu->parameters();
  for (size_t i = 0; i < c.size(); ++i)
    EXPECT_LT(relative_error(g[i].detach() - before[i].to(kGpu), c[i].detach() - before[i]), 0.02) << "parameter " << i;
}

}  // namespace
}  // namespace kestrel
