// The GPU's stage clock (device/stage_events.h): off on a CPU; on a GPU (skipped without one) the
// summed event times follow the work queued between the marks, and every step is counted once the
// totals are taken with wait. format_device_line's arithmetic on known totals.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "device/device.h"
#include "device/stage_events.h"

namespace kestrel {
namespace {

TEST(DeviceStageClock, IsOffOnACpu) {
  DeviceStageClock clock(torch::kCPU);
  EXPECT_FALSE(clock.enabled());
  clock.begin_step();
  clock.mark(StepStage::forward);
  clock.end_step();
  EXPECT_EQ(clock.take(true).steps, 0u);
}

TEST(DeviceStageClock, FormatsTheGpuTimeAgainstTheHostStep) {
  StageTotals gpu, host;
  gpu.steps = host.steps = 4;
  gpu.seconds[static_cast<size_t>(StepStage::forward)] = 0.040;   // 10 ms a step
  gpu.seconds[static_cast<size_t>(StepStage::backward)] = 0.080;  // 20 ms
  host.seconds[static_cast<size_t>(StepStage::data_wait)] = 0.020;
  host.seconds[static_cast<size_t>(StepStage::backward)] = 0.140;  // host step: 40 ms
  EXPECT_EQ(format_device_line(gpu, host), "GPU per step: forward 10.0 ms, backward 20.0 ms = 30.0 ms of a 40.0 ms step (75% busy)");
  EXPECT_EQ(format_device_line(StageTotals{}, host), "");
}

TEST(Device, ParsesYoloV5DeviceStrings) {
  EXPECT_EQ(parse_device("cpu"), torch::Device(torch::kCPU));
  if (torch::cuda::is_available()) {
    EXPECT_EQ(parse_device(""), torch::Device(torch::kCUDA, 0));
    EXPECT_EQ(parse_device("0"), torch::Device(torch::kCUDA, 0));
    EXPECT_THROW(parse_device("99"), std::runtime_error);
  } else {
    EXPECT_EQ(parse_device(""), torch::Device(torch::kCPU));  // no GPU: the default is the CPU
    EXPECT_THROW(parse_device("0"), std::runtime_error);
    EXPECT_THROW(parse_device("cuda:1"), std::runtime_error);
  }
}

TEST(Device, BuildVersionsNameTheCudaLibTorch) {
  const BuildVersions v = build_versions();
  EXPECT_EQ(v.libtorch.substr(0, 2), "2.");
  EXPECT_FALSE(v.cuda.empty());   // the CUDA build, even on a machine without a GPU
  EXPECT_FALSE(v.cudnn.empty());
  EXPECT_EQ(peak_memory_bytes(torch::kCPU), 0);
  EXPECT_EQ(pci_bus_id(torch::kCPU), "");
}

TEST(DeviceStageClock, GpuEventsMeasureTheQueuedWork) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device on this machine (the device check runs this)";
  const torch::Device gpu(torch::kCUDA, 0);
  DeviceStageClock clock(gpu);
  ASSERT_TRUE(clock.enabled());
  torch::Tensor a = torch::rand({2048, 2048}, torch::TensorOptions().device(gpu));
  for (int step = 0; step < 5; ++step) {
    clock.begin_step();
    torch::Tensor small = a.add(1);
    clock.mark(StepStage::forward);
    for (int r = 0; r < 8; ++r) a = a.mm(a).tanh();  // 8x the work of one matmul
    clock.mark(StepStage::backward);
    clock.end_step();
  }
  const StageTotals t = clock.take(/*wait=*/true);
  EXPECT_EQ(t.steps, 5u);
  EXPECT_GT(t.seconds[static_cast<size_t>(StepStage::backward)], 4 * t.seconds[static_cast<size_t>(StepStage::forward)]);
  EXPECT_EQ(clock.take(true).steps, 0u);  // taken once
}

}  // namespace
}  // namespace kestrel
