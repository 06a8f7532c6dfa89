// The run's precision (see amp_choice.h).
#include "train/amp_choice.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cstdio>

namespace kestrel {

bool amp_predictions_agree(const DetectionModelImpl& source, Precision p, const torch::Device& device, int img_size) {
  const std::shared_ptr<DetectionModelImpl> model = source.copy();
  model->to(device);
  model->eval();
  torch::NoGradGuard no_grad;
  at::Generator gen = at::detail::createCPUGenerator(0);  // the run's random stream is left alone
  const torch::Tensor image = torch::rand({1, 3, img_size, img_size}, gen).contiguous(torch::MemoryFormat::ChannelsLast).to(device);
  auto predict = [&](Precision q) {
    Autocast autocast(q, device);
    torch::Tensor d = model->decode(model->forward(image)).to(torch::kFloat)[0];
    d.slice(1, 0, 4).div_(img_size);
    return d;
  };
  const torch::Tensor a = predict(Precision::fp32), b = predict(p);
  const torch::Tensor top = std::get<1>(a.select(1, 4).topk(std::min<int64_t>(100, a.size(0))));
  return torch::allclose(a.index_select(0, top), b.index_select(0, top), /*rtol=*/0, /*atol=*/0.1);
}

AmpChoice choose_amp(const std::string& flag, const DetectionModelImpl& model, const StepBenchOptions& shape) {
  AmpChoice c;
  if (flag != "auto") {
    c.precision = parse_precision(flag);
    check_precision_supported(c.precision, shape.device);
    c.why = "--amp " + flag + ": " + precision_name(c.precision) + (c.precision == Precision::fp32 ? "" : " mixed precision");
    return c;
  }
  if (shape.device.is_cuda()) {
    const bool ok = amp_predictions_agree(model, Precision::fp16, shape.device, shape.img_size);
    c.precision = ok ? Precision::fp16 : Precision::fp32;
    c.why = ok ? "--amp auto: fp16 checks passed (fp32 and fp16 predictions agree)"
               : "--amp auto: fp16 predictions differ from fp32 on this model; training in fp32";
    return c;
  }
  if (!cpu_has_bf16()) {
    c.why = "--amp auto: fp32 (this CPU has no bf16 instructions: avx512_bf16 or amx_bf16)";
    return c;
  }
  StepBenchOptions o = shape;
  o.optimizer = false;  // its cost does not depend on the precision; the run's check leaves it out too
  StepRunner runner(model, o);
  runner.step(Precision::fp32), runner.step(Precision::bf16);  // warm-up: each precision's kernels and buffers
  std::vector<double> ms[2];
  for (int r = 0; r < kAmpProbeRepeats; ++r)
    for (int k = 0; k < 2; ++k) {  // fp32 bf16, bf16 fp32, ...: a drift in the machine's speed hits both alike
      const int which = (r + k) % 2;
      const StepTimes t = runner.step(which ? Precision::bf16 : Precision::fp32);
      ms[which].push_back(t.forward_ms + t.loss_ms + t.backward_ms);
    }
  c.fp32_ms = summarize_samples(ms[0]), c.bf16_ms = summarize_samples(ms[1]);
  const double noise = comparison_noise(c.fp32_ms, c.bf16_ms, 0.02);
  const double gain = 1 - c.bf16_ms.median / c.fp32_ms.median;
  c.precision = gain > noise ? Precision::bf16 : Precision::fp32;
  char line[320];
  std::snprintf(line, sizeof line,
                "--amp auto: forward+loss+backward at batch %d, %d px, median of %d alternating steps each: fp32 %.0f ms "
                "±%.1f%%, bf16 %.0f ms ±%.1f%% -> %s",
                shape.batch_size, shape.img_size, kAmpProbeRepeats, c.fp32_ms.median, 50 * c.fp32_ms.spread, c.bf16_ms.median,
                50 * c.bf16_ms.spread,
                c.precision == Precision::bf16 ? "bf16 mixed precision" : gain < -noise ? "fp32 (bf16 is slower here)"
                                                                                        : "fp32 (the two are within the noise)");
  c.why = line;
  return c;
}

}  // namespace kestrel
