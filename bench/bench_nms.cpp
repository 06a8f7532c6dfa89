// Benchmark of eval/nms on validation-sized inputs (640x640, 25200 rows x 85, val.py settings:
// conf 0.001, IoU 0.6, multi-label, max_det 300). Time per iteration is one image.
//   trained: ~20 objects, each seen by ~60 jittered rows with confident scores, and a background
//            whose obj*cls mostly stays under 0.001 (a few thousand candidates, as a trained model).
//   untrained: obj and class scores near 0.5 everywhere (an early-epoch model): ~2M candidates,
//              capped at max_nms = 30000 before suppression.
#include <benchmark/benchmark.h>

#include "eval/nms.h"

namespace {

using kestrel::non_max_suppression;

torch::Tensor trained_like_prediction(int64_t rows, int64_t nc) {
  torch::manual_seed(0);
  auto p = torch::empty({1, rows, 5 + nc});
  auto x = p[0];
  x.narrow(1, 0, 2).uniform_(0, 640);
  x.narrow(1, 2, 2).uniform_(8, 200);
  x.select(1, 4).copy_(torch::pow(10.0, torch::empty({rows}).uniform_(-4, -1)));
  x.narrow(1, 5, nc).copy_(torch::pow(10.0, torch::empty({rows, nc}).uniform_(-5, -2.2)));
  const int64_t objects = 20, copies = 60;
  for (int64_t o = 0; o < objects; ++o) {
    const auto centre = torch::empty({2}).uniform_(50, 590);
    const auto size = torch::empty({2}).uniform_(20, 300);
    const int64_t cls = o * 7 % nc;
    for (int64_t k = 0; k < copies; ++k) {
      auto r = x[(o * 997 + k * 31) % rows];
      r.narrow(0, 0, 2).copy_(centre + torch::randn({2}) * size * 0.08);
      r.narrow(0, 2, 2).copy_(size * (1 + torch::randn({2}) * 0.1));
      r[4] = torch::empty({}).uniform_(0.2, 0.95);
      r[5 + cls] = torch::empty({}).uniform_(0.4, 0.97);
      r[5 + (cls + 1) % nc] = torch::empty({}).uniform_(0.0, 0.3);  // a confusable second class
    }
  }
  return p;
}

torch::Tensor untrained_like_prediction(int64_t rows, int64_t nc) {
  torch::manual_seed(1);
  auto p = torch::empty({1, rows, 5 + nc});
  p[0].narrow(1, 0, 2).uniform_(0, 640);
  p[0].narrow(1, 2, 2).uniform_(8, 200);
  p[0].narrow(1, 4, 1 + nc).uniform_(0.3, 0.7);
  return p;
}

void run(benchmark::State& state, const torch::Tensor& pred) {
  const auto options = kestrel::val_nms_options();
  int64_t kept = 0;
  for (auto _ : state) {
    auto out = non_max_suppression(pred, options);
    kept = out[0].size(0);
    benchmark::DoNotOptimize(out);
  }
  state.counters["detections"] = static_cast<double>(kept);
  const auto obj = pred[0].select(1, 4);
  const auto scores = pred[0].narrow(1, 5, pred.size(2) - 5) * obj.unsqueeze(1);
  state.counters["candidates"] =
      ((scores > 0.001f) & (obj > 0.001f).unsqueeze(1)).sum().item<double>();
}

void BM_NmsTrainedModel(benchmark::State& state) { run(state, trained_like_prediction(25200, 80)); }
void BM_NmsUntrainedModel(benchmark::State& state) { run(state, untrained_like_prediction(25200, 80)); }

BENCHMARK(BM_NmsTrainedModel)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_NmsUntrainedModel)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
