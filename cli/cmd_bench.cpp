// kestrel bench loader: loader throughput (images/s) and milliseconds per stage.
#include <stdexcept>

#include "commands.h"
#include "data/loader/loader_bench.h"

namespace kestrel::cli {

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
}

}  // namespace kestrel::cli
