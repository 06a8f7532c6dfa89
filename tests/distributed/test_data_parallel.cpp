// Data-parallel training steps against one process, on real c10d/Gloo process groups over loopback:
// each test forks its ranks before this process touches LibTorch, the ranks save what they computed,
// and the parent compares it with the same steps run in one process.
// - Same batch on every rank: the averaged gradient of loss x world size is world size times the
//   one-process gradient (YOLOv5's scaling), whether it is reduced in buckets during backward or in
//   one exchange after it, and also across an accumulation window of two micro-batches.
// - A global batch split over 2 ranks with SyncBN: the summed losses of the ranks and the weights and
//   BatchNorm statistics after three SGD steps equal one process's on the whole batch.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>

#include "core/hyp.h"
#include "distributed/data_parallel.h"
#include "model/weights.h"
#include "test_support.h"

using kestrel::test::free_tcp_port;
#include "train/loss.h"

namespace kestrel {
namespace {

constexpr int kImg = 64, kNc = 3;

// Forks `world` ranks that run body(rank) with torchrun's variables set; returns when all exited, and
// fails the test for a rank that did not exit 0.
void run_ranks(int world, const std::function<void(int)>& body) {
  const int port = free_tcp_port();
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(world).c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      int code = 0;
      try {
        torch::set_num_threads(1);
        body(r);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", r, e.what());
        code = 1;
      }
      _exit(code);
    }
    pids.push_back(pid);
  }
  for (int r = 0; r < world; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "rank " << r << " failed (status " << status << ")";
  }
}

DetectionModel fresh_model() {
  torch::manual_seed(0);
  DetectionModel m = build_model("yolov5n.yaml", "", kNc).model;
  m->train();
  return m;
}

// Images differ; every image carries the same three boxes, so each rank's share of a batch has the
// same targets per detection layer and YOLOv5's per-rank loss means add up to the global one.
std::pair<torch::Tensor, torch::Tensor> batch(int first, int n) {
  std::vector<torch::Tensor> imgs;
  for (int i = first; i < first + n; ++i) {
    torch::manual_seed(1000 + i);
    imgs.push_back(torch::rand({1, 3, kImg, kImg}));
  }
  std::vector<float> rows;
  for (int i = 0; i < n; ++i) {
    const float boxes[3][5] = {{0, 0.3f, 0.3f, 0.2f, 0.3f}, {1, 0.6f, 0.5f, 0.5f, 0.4f}, {2, 0.7f, 0.8f, 0.1f, 0.1f}};
    for (const auto& b : boxes) rows.insert(rows.end(), {static_cast<float>(i), b[0], b[1], b[2], b[3], b[4]});
  }
  return {torch::cat(imgs), torch::tensor(rows).view({-1, 6})};
}

YoloLoss make_loss(DetectionModel& m) {
  return YoloLoss(loss_config_from_hyp(Hyp{}, kNc, static_cast<int>(m->nl()), kImg, m->anchors()));
}

std::vector<torch::Tensor> grads_of(DetectionModel& m) {
  std::vector<torch::Tensor> g;
  for (auto& p : m->parameters()) g.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  return g;
}

// Gradients of `micro` backward passes of the whole batch in one process, each loss x `scale`.
std::vector<torch::Tensor> one_process_grads(double scale, int micro) {
  torch::set_num_threads(1);
  DetectionModel m = fresh_model();
  YoloLoss loss = make_loss(m);
  for (int k = 0; k < micro; ++k) {
    auto [x, t] = batch(k * 4, 4);
    (loss(m->forward(x), t).first * scale).backward();
  }
  return grads_of(m);
}

void expect_close(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b, double rtol, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double scale = std::max(1e-3, b[i].abs().max().item<double>());
    worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>() / scale);
  }
  EXPECT_LT(worst, rtol) << what << ": largest difference relative to the tensor's largest value";
}

// Every rank: the same batches, loss x world, gradients exchanged on the last of `micro` backwards.
void same_batch_gradients(GradSyncOptions sync, int micro, const std::string& out_dir) {
  const int world = 2;
  run_ranks(world, [&](int rank) {
    auto dp = DataParallel::from_environment(std::chrono::seconds(60));
    DetectionModel m = fresh_model();
    dp->broadcast_state(*m);
    dp->sync_gradients_of(m->parameters(), sync);
    YoloLoss loss = make_loss(m);
    for (int k = 0; k < micro; ++k) {
      auto [x, t] = batch(k * 4, 4);
      if (k == micro - 1) dp->arm_gradient_sync();
      (loss(m->forward(x), t).first * dp->size()).backward();
      dp->finish_gradient_sync();
    }
    torch::save(grads_of(m), out_dir + "/grads" + std::to_string(rank) + ".pt");
  });
  std::vector<torch::Tensor> single = one_process_grads(1.0, micro);
  for (auto& g : single) g.mul_(world);
  for (int r = 0; r < world; ++r) {
    std::vector<torch::Tensor> got;
    torch::load(got, out_dir + "/grads" + std::to_string(r) + ".pt");
    // Float summation order only: the bucket copies and a sum of two equal values are exact, the
    // forward/backward is the same computation.
    expect_close(got, single, 1e-5, ("rank " + std::to_string(r)).c_str());
  }
}

TEST(DataParallel, SameBatchGivesWorldSizeTimesTheGradientInBuckets) {
  GradSyncOptions o;
  o.bucket_bytes = 256 << 10;  // yolov5n's 1.8M parameters in ~28 buckets
  same_batch_gradients(o, 1, test::temp_dir("dp_buckets"));
}

TEST(DataParallel, SameBatchGivesWorldSizeTimesTheGradientAfterBackward) {
  GradSyncOptions o;
  o.overlap = false;
  same_batch_gradients(o, 1, test::temp_dir("dp_flat"));
}

TEST(DataParallel, AccumulatedWindowIsExchangedOnce) {
  GradSyncOptions o;
  o.bucket_bytes = 1 << 20;
  same_batch_gradients(o, 2, test::temp_dir("dp_accumulate"));
}

// One process, SGD on the whole batch of 4, three steps: the losses and the end state.
struct Trajectory {
  std::vector<double> losses;
  std::vector<torch::Tensor> state;  // parameters, then BatchNorm running statistics
};

std::vector<torch::Tensor> state_of(DetectionModel& m) {
  std::vector<torch::Tensor> s;
  for (auto& p : m->parameters()) s.push_back(p.detach().clone());
  for (auto& b : m->buffers())
    if (b.is_floating_point()) s.push_back(b.clone());
  return s;
}

Trajectory train_steps(DataParallel* dp, int steps) {
  DetectionModel m = fresh_model();
  if (dp) {
    dp->broadcast_state(*m);
    dp->use_sync_batch_norm(*m);
    dp->sync_gradients_of(m->parameters());
  }
  YoloLoss loss = make_loss(m);
  torch::optim::SGD sgd(m->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  const int world = dp ? dp->size() : 1, rank = dp ? dp->world().rank : 0, per_rank = 4 / world;
  Trajectory t;
  for (int s = 0; s < steps; ++s) {
    // Rank r's share: every world-th image of the global batch, as the loader's shards.
    auto [x, targets] = batch(s * 4, 4);
    std::vector<int64_t> mine;
    for (int i = rank; i < 4; i += world) mine.push_back(i);
    torch::Tensor idx = torch::tensor(mine);
    x = x.index_select(0, idx);
    torch::Tensor keep = torch::zeros({targets.size(0)}, torch::kBool);
    torch::Tensor tg = targets.clone();
    for (int64_t j = 0; j < targets.size(0); ++j) {
      const int img = static_cast<int>(targets[j][0].item<float>());
      if (img % world == rank) keep[j] = true, tg[j][0] = img / world;
    }
    tg = tg.index({keep});
    EXPECT_EQ(x.size(0), per_rank);
    torch::Tensor l = loss(m->forward(x), tg).first;
    torch::Tensor total = l.detach().clone();
    if (dp) {
      dp->group()->all_reduce_sum(total);
      dp->arm_gradient_sync();
      (l * world).backward();
      dp->finish_gradient_sync();
    } else {
      l.backward();
    }
    t.losses.push_back(total.item<double>());
    sgd.step();
    sgd.zero_grad();
  }
  t.state = state_of(m);
  return t;
}

TEST(DataParallel, SplitBatchWithSyncBnTrainsAsOneProcess) {
  const std::string dir = test::temp_dir("dp_split");
  const int steps = 3;
  run_ranks(2, [&](int rank) {
    auto dp = DataParallel::from_environment(std::chrono::seconds(60));
    Trajectory t = train_steps(dp.get(), steps);
    if (rank == 0) {
      torch::save(t.state, dir + "/state.pt");
      torch::save(torch::tensor(t.losses), dir + "/losses.pt");
    }
  });
  torch::set_num_threads(1);
  const Trajectory single = train_steps(nullptr, steps);
  torch::Tensor losses;
  torch::load(losses, dir + "/losses.pt");
  for (int s = 0; s < steps; ++s)
    EXPECT_NEAR(losses[s].item<double>(), single.losses[s], 1e-4 * single.losses[s]) << "step " << s;
  std::vector<torch::Tensor> state;
  torch::load(state, dir + "/state.pt");
  // After three steps the float differences of split reductions (BatchNorm sums, loss means) have gone
  // through the optimizer; 1e-4 of each tensor's largest value is ~100x what they amount to.
  expect_close(state, single.state, 1e-4, "weights and BatchNorm statistics after 3 steps");
}

}  // namespace
}  // namespace kestrel
