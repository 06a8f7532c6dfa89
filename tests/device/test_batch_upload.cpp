// The batch seam (device/batch_upload.h): uint8 NCHW -> float 0..1 channels-last with the batch's
// labels, paths and shapes kept apart from its pixels. On a CPU the uploader converts at once; on a
// GPU (tests that skip without one) the side-stream copy from pinned buffers gives the same tensors
// as a synchronous copy, including for a batch whose buffer the loader refills right after
// release_host.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "device/batch_upload.h"
#include "device/pinned_memory.h"

namespace kestrel {
namespace {

Batch make_batch(std::pmr::memory_resource* memory, int n, int h, int w, uint8_t seed) {
  Batch b(memory ? memory : std::pmr::get_default_resource());
  b.n = n, b.h = h, b.w = w;
  b.pixels.resize(static_cast<size_t>(n) * 3 * h * w);
  for (size_t i = 0; i < b.pixels.size(); ++i) b.pixels[i] = static_cast<uint8_t>((i * 31 + seed) % 256);
  for (int i = 0; i < n; ++i) {
    b.labels.insert(b.labels.end(), {static_cast<float>(i), 2.0f, 0.5f, 0.25f, 0.1f, 0.2f + seed / 1000.0f});
    b.paths.push_back("img" + std::to_string(i) + ".jpg");
  }
  b.shapes.resize(n);
  return b;
}

torch::Tensor expected_images(const Batch& b) {
  return torch::from_blob(const_cast<uint8_t*>(b.pixels.data()), {b.n, 3, b.h, b.w}, torch::kUInt8).to(torch::kFloat32) / 255.0f;
}

TEST(BatchUpload, CpuUploadNormalisesToChannelsLastAndKeepsTheLabels) {
  BatchUploader up(torch::kCPU);
  EXPECT_EQ(up.host_memory(), nullptr);  // no pinned memory without a GPU
  Batch b = make_batch(nullptr, 2, 8, 12, 3);
  DeviceBatch d = up.upload(b);
  const torch::Tensor want = expected_images(b);
  b.pixels.assign(b.pixels.size(), 0);  // the loader refills its buffer: the upload has its own copy
  up.release_host(d);
  const torch::Tensor& images = up.ready(d);
  EXPECT_TRUE(images.is_contiguous(torch::MemoryFormat::ChannelsLast));
  EXPECT_EQ(images.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(images, want));
  EXPECT_EQ(&up.ready(d), &images);  // ready twice normalises once
  ASSERT_EQ(d.targets.sizes(), (std::vector<int64_t>{2, 6}));
  EXPECT_FLOAT_EQ(d.targets[1][0].item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(d.targets[1][5].item<float>(), 0.203f);
  EXPECT_TRUE(d.host.pixels.empty());
  EXPECT_EQ(d.host.labels, b.labels);
  EXPECT_EQ(d.host.paths, b.paths);
  EXPECT_EQ(d.host.n, 2);
}

TEST(BatchUpload, BatchWithoutLabelsGivesAnEmptyTargetTable) {
  Batch b = make_batch(nullptr, 1, 4, 4, 0);
  b.labels.clear();
  const DeviceBatch d = upload_now(b, torch::kCPU);
  EXPECT_EQ(d.targets.sizes(), (std::vector<int64_t>{0, 6}));
}

TEST(BatchUpload, PinnedMemoryNeedsACudaDevice) {
  EXPECT_THROW(PinnedMemory(torch::Device(torch::kCPU)), std::invalid_argument);
}

// GPU: batch k+1's copy is queued on the side stream while "step k" (a matmul chain) runs on the
// compute stream; each batch's tensors equal the synchronous copy's, and the pinned buffer refilled
// after release_host does not leak into a batch already uploaded.
TEST(BatchUpload, GpuSideStreamCopiesEqualSynchronousCopies) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device on this machine (the device check runs this)";
  const torch::Device gpu(torch::kCUDA, 0);
  BatchUploader up(gpu);
  ASSERT_NE(up.host_memory(), nullptr);
  Batch slot = make_batch(up.host_memory(), 4, 64, 96, 1);  // one reused pinned buffer, as a loader slot
  DeviceBatch next = up.upload(slot);
  torch::Tensor want = expected_images(slot).to(gpu);
  torch::Tensor busy = torch::rand({2048, 2048}, torch::TensorOptions().device(gpu));
  for (int k = 0; k < 6; ++k) {
    DeviceBatch current = std::move(next);
    up.release_host(current);
    const torch::Tensor want_current = want;
    // the loader refills the slot with the next batch while the current one is still to be used
    const Batch refilled = make_batch(up.host_memory(), 4, 64, 96, static_cast<uint8_t>(k + 2));
    std::copy(refilled.pixels.begin(), refilled.pixels.end(), slot.pixels.begin());
    slot.labels = refilled.labels;
    next = up.upload(slot);
    want = expected_images(slot).to(gpu);
    for (int r = 0; r < 4; ++r) busy = busy.mm(busy).tanh();  // the step the copy overlaps
    const torch::Tensor& images = up.ready(current);
    EXPECT_TRUE(torch::equal(images, want_current)) << "batch " << k;
    EXPECT_TRUE(images.is_contiguous(torch::MemoryFormat::ChannelsLast));
    EXPECT_TRUE(current.targets.is_cuda());
  }
  torch::cuda::synchronize();
}

}  // namespace
}  // namespace kestrel
