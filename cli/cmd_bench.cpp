// kestrel bench loader: loader throughput (images/s) and milliseconds per stage.
// kestrel bench step: training step time (ms per stage, images/s) at fp32 / bf16 / fp16.
// kestrel bench dp: one process against N data-parallel processes, bucketed vs after-backward all-reduce.
#include <stdexcept>

#include "commands.h"
#include "data/loader/loader_bench.h"
#include "train/step_bench.h"

namespace kestrel::cli {

namespace {

void register_bench_step(CLI::App& bench) {
  static StepBenchRun r;
  auto* cmd = add_command(bench, "step", "Training step time by stage and precision on synthetic batches", [] {
    run_step_bench(r);
    return 0;
  });
  cmd->add_option("--cfg", r.cfg, "model yaml (path or built-in: yolov5{n,s,m,l,x}.yaml, yolov8n.yaml .. yolov8x, yolo11n .. yolo11x, yolov5nu .. yolov5xu; default yolov5n.yaml)");
  cmd->add_option("--weights", r.weights, "weights to time, with their own architecture and classes (a YOLOv5 .pt or a Kestrel checkpoint)");
  cmd->add_option("--nc", r.nc, "classes of the model (default: the model's own)");
  cmd->add_option("--imgsz,--img,--img-size", r.shape.img_size, "image size");
  cmd->add_option("--batch-size,--batch", r.shape.batch_size, "batch size");
  cmd->add_option("--amp", r.precisions, "precisions to time, in order: off (fp32), bf16, fp16 (CUDA)")->expected(1, -1);
  cmd->add_option("--steps", r.shape.steps, "timed steps per precision");
  cmd->add_option("--warmup", r.shape.warmup, "untimed steps first");
  cmd->add_option("--device", r.device, "cuda device: 0, cuda:1, 0,1,2,3 (one process per GPU), or cpu; default: a GPU when there is one");
  cmd->add_option("--layout", r.shape.memory_format, "channels-last (as training runs) or nchw")
      ->transform(CLI::CheckedTransformer(std::map<std::string, torch::MemoryFormat>{
          {"channels-last", torch::MemoryFormat::ChannelsLast}, {"nchw", torch::MemoryFormat::Contiguous}}));
}

void register_bench_dp(CLI::App& bench) {
  static DataParallelBenchRun r;
  auto* cmd = add_command(bench, "dp", "Data-parallel step: 1 process x all cores vs N processes, all-reduce overlap", [] {
    return run_data_parallel_bench(r);
  });
  cmd->add_option("--cfg", r.cfg, "model yaml (path or built-in: yolov5{n,s,m,l,x}.yaml, yolov8n.yaml .. yolov8x, yolo11n .. yolo11x, yolov5nu .. yolov5xu)");
  cmd->add_option("--nc", r.nc, "classes of the model");
  cmd->add_option("--imgsz,--img,--img-size", r.shape.img_size, "image size");
  cmd->add_option("--batch-size,--batch", r.shape.batch_size, "global batch size, split over the processes");
  cmd->add_option("--nproc-per-node", r.nproc, "data-parallel processes");
  cmd->add_option("--master-port", r.master_port, "a free TCP port for their rendezvous");
  cmd->add_option("--bucket-mb", r.shape.grad_sync.bucket_bytes, "gradient bucket size in MiB (default 4)")->transform([](std::string s) {
    return std::to_string(static_cast<size_t>(std::stod(s) * (1 << 20)));
  });
  cmd->add_option("--steps", r.shape.steps, "timed steps per mode");
  cmd->add_option("--warmup", r.shape.warmup, "untimed steps first");
}

}  // namespace

void register_bench(CLI::App& app) {
  static LoaderBenchOptions o;
  static std::string cache = "none";
  auto* bench = app.add_subcommand("bench", "Benchmarks");
  bench->require_subcommand(1);
  auto* cmd = add_command(*bench, "loader", "Loader throughput and per-stage times on a dataset", [] {
    o.loader.cache = parse_cache_mode(cache);
    run_loader_bench(o);
    return 0;
  });
  cmd->add_option("--data", o.data_yaml, "data.yaml")->required();
  cmd->add_option("--imgsz,--img,--img-size", o.loader.img_size, "image size");
  cmd->add_option("--batch-size,--batch", o.loader.batch_size, "batch size");
  cmd->add_option("--workers", o.loader.workers, "loader threads");
  cmd->add_option("--prefetch", o.loader.prefetch, "batches in flight");
  cmd->add_option("--cache", cache, "none, ram or disk")->check(CLI::IsMember({"none", "ram", "disk"}));
  cmd->add_option("--epochs", o.epochs, "epochs to time");
  cmd->add_option("--batches", o.batches, "stop after this many batches (0 = whole epochs)");
  cmd->add_flag("--full-decode{false}", o.loader.partial_decode,
                "decode every mosaic tile whole (default: only the part its warp reads)");
  cmd->add_flag("--val", o.val, "the val split, letterboxed (no augmentation)");
  cmd->add_option("--probe", o.probe_images, "images timed stage by stage on one thread");
  register_bench_step(*bench);
  register_bench_dp(*bench);
}

}  // namespace kestrel::cli
