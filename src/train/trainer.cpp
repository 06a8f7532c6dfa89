// train.py's loop. Order of operations per batch, as YOLOv5: schedule (warmup lr/momentum),
// uint8 batch -> float/255 on the device, optional multi-scale resize, forward, loss, backward,
// and every `accumulate` batches: clip at norm 10, step, zero grads, EMA update.
#include "train/trainer.h"

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "data/dataset_config.h"
#include "data/demo_dataset.h"
#include "data/index_report.h"
#include "data/label_index.h"
#include "data/loader.h"
#include "data/scan.h"
#include "data/scan_report.h"
#include "data/worker_tuning.h"
#include "profile/report_json.h"
#include "profile/system_sampler.h"
#include "profile/verdict.h"
#include "report/progress_bar.h"
#include "report/progress_callback.h"
#include "report/results_csv.h"
#include "report/run_dir.h"
#include "train/checkpoint.h"
#include "train/early_stopping.h"
#include "train/ema.h"
#include "train/loss.h"
#include "train/lr_schedule.h"
#include "train/optimizer.h"
#include "train/weights.h"
#include "val/batch_tensors.h"
#include "val/validator.h"

namespace fs = std::filesystem;

namespace kestrel {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void on_sigint(int) { g_interrupted = 1; }

// --cache: none, ram, disk, or auto (RAM when the train and val images are small next to the free memory).
CacheMode parse_cache(const std::string& c, const DatasetIndex& train, const DatasetIndex& val, int img_size) {
  if (c == "none" || c.empty() || c == "false") return CacheMode::none;
  if (c == "ram" || c == "true") return CacheMode::ram;
  if (c == "disk") return CacheMode::disk;
  if (c == "auto") {
    std::string why;
    const size_t bytes = estimate_cache_bytes(train.records, img_size) + estimate_cache_bytes(val.records, img_size);
    const CacheMode mode = choose_auto_cache(bytes, mem_available_bytes(), &why);
    std::cout << "--cache auto: " << why << std::endl;  // before the cache's own lines on stderr
    return mode;
  }
  throw std::runtime_error("--cache must be auto, none, ram or disk (got '" + c + "')");
}

// train.py: one class named 'item' for --single-cls, unless the data has a single name already.
std::vector<std::string> class_names(const DatasetConfig& data, bool single_cls) {
  if (single_cls && data.names.size() != 1) return {"item"};
  return data.names;
}

// Loader threads and LibTorch's compute threads share the cores. The compute threads get all cores
// (OpenMP threads sleep at barriers thanks to OMP_WAIT_POLICY=PASSIVE), so the loader takes the cycles
// compute leaves idle and, beyond those, time from compute (hence --cache auto).
int default_workers(int cores) { return std::max(1, std::min(8, cores)); }

std::string latest_last_pt(const std::string& project) {
  std::string best;
  fs::file_time_type best_time{};
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(project, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().filename() != "last.pt") continue;
    const auto t = fs::last_write_time(it->path(), ec);
    if (best.empty() || t > best_time) best = it->path().string(), best_time = t;
  }
  if (best.empty()) throw std::runtime_error("--resume: no last.pt found under " + project);
  return best;
}


}  // namespace

TrainResult train(TrainOptions opt) {
  // ---- resume: the checkpoint's options, the same run folder
  std::string resume_ckpt;
  if (!opt.resume.empty()) {
    resume_ckpt = opt.resume == "auto" ? latest_last_pt(opt.project) : opt.resume;
    const CheckpointMeta meta = load_checkpoint(resume_ckpt, nullptr, nullptr, nullptr);
    const bool progress = opt.progress;
    opt = meta.train_options.get<TrainOptions>();
    opt.progress = progress;
    opt.resume = resume_ckpt;
    std::cout << "Resuming training from " << resume_ckpt << " (epoch " << meta.epoch + 1 << ")\n";
  }
  const bool demo = opt.data.empty();
  if (demo) {
    opt.data = ensure_demo_dataset();
    std::cout << "No --data given: training on the built-in demo dataset " << opt.data << "\n";
  }

  const torch::Device device = parse_device(opt.device);
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  torch::set_num_threads(cores);
  torch::manual_seed(opt.seed);
  int workers = opt.workers >= 0 ? opt.workers : default_workers(cores);  // auto: refined once the loader exists

  const std::string save_dir = resume_ckpt.empty() ? make_run_dir(opt.project, opt.name, opt.exist_ok).save_dir
                                                   : fs::path(resume_ckpt).parent_path().parent_path().string();
  const std::string wdir = save_dir + "/weights";
  fs::create_directories(wdir);
  {
    std::ofstream(save_dir + "/opt.json") << nlohmann::json(opt).dump(2) << "\n";
  }

  Hyp hyp = opt.hyp.empty() ? Hyp{} : load_hyp(opt.hyp);
  if (opt.label_smoothing > 0) hyp.label_smoothing = opt.label_smoothing;

  // ---- data
  const DatasetConfig data = load_dataset_config(opt.data);
  const int nc = opt.single_cls ? 1 : data.nc;
  const std::vector<std::string> names = class_names(data, opt.single_cls);
  DatasetIndex train_index = build_index(data.train, data.nc, opt.single_cls);
  DatasetIndex val_index = build_index(data.val, data.nc, opt.single_cls);
  for (const auto& w : train_index.warnings) std::cerr << "WARNING: " << w << "\n";
  for (const auto& w : val_index.warnings) std::cerr << "WARNING: " << w << "\n";
  std::cout << "train: " << format_index_stats(train_index.stats) << "\n";
  std::cout << "val: " << format_index_stats(val_index.stats) << "\n";
  if (train_index.records.empty()) throw std::runtime_error(opt.data + ": no training images found");
  if (opt.scan) {
    // The health check (data/scan.h): the index already skips what cannot be used; this says what is wrong.
    // Decodes every image once per dataset version, then costs a stat per file (cached).
    ProgressCallback progress("scan");
    ScanOptions so;
    so.nc = data.nc, so.single_cls = opt.single_cls;
    if (opt.progress) so.progress = progress.callback();
    std::vector<std::string> sources = data.train;
    sources.insert(sources.end(), data.val.begin(), data.val.end());
    const ScanReport scan = scan_dataset(sources, so);
    progress.close();
    std::cout << "scan: " << format_scan_summary(scan)
              << (scan.faults.empty() ? "" : "; every fault: kestrel scan --data " + opt.data) << "\n";
  }

  // ---- model
  BuiltModel built = resume_ckpt.empty() ? build_model(opt.cfg.empty() && opt.weights.empty() ? "yolov5s.yaml" : opt.cfg, opt.weights, nc)
                                          : checkpoint_architecture(resume_ckpt);
  DetectionModel model = built.model;
  if (resume_ckpt.empty()) std::cout << describe_build(built, opt.weights);
  if (model->nc() != nc)
    throw std::runtime_error(resume_ckpt + " was trained on " + std::to_string(model->nc()) + " classes, but " + opt.data +
                             " now has " + std::to_string(nc) + ": resume with the data it was trained on");
  model->set_names(names);
  model->to(device);
  model->set_memory_format(torch::MemoryFormat::ChannelsLast);
  // --freeze: layers 0..N-1 (one number) or the listed layers.
  std::vector<int> frozen = opt.freeze.size() == 1 ? std::vector<int>{} : opt.freeze;
  if (opt.freeze.size() == 1)
    for (int i = 0; i < opt.freeze[0]; ++i) frozen.push_back(i);
  for (auto& p : model->named_parameters()) {
    for (int f : frozen)
      if (p.key().rfind("model." + std::to_string(f) + ".", 0) == 0) {
        p.value().set_requires_grad(false);
        std::cout << "freezing " << p.key() << "\n";
      }
  }
  const int gs = std::max(32, static_cast<int>(model->stride().back()));
  if (opt.img_size % gs) {
    const int fixed = (opt.img_size + gs - 1) / gs * gs;
    std::cerr << "WARNING: --img " << opt.img_size << " must be a multiple of max stride " << gs << ", updating to " << fixed << "\n";
    opt.img_size = fixed;
  }

  // ---- loader, schedule, optimizer, EMA, loss
  LoaderOptions lo;
  lo.img_size = opt.img_size;
  lo.batch_size = opt.batch_size;
  lo.workers = workers;
  lo.prefetch = opt.prefetch;
  lo.augment = true;
  lo.rect = opt.rect;
  lo.shuffle = !opt.rect;
  lo.pad = 0.0;
  lo.seed = static_cast<uint64_t>(opt.seed);
  lo.cache = parse_cache(opt.cache, train_index, val_index, opt.img_size);
  lo.hyp = hyp;
  Loader loader(train_index.records, lo);
  if (opt.workers < 0) {  // --workers auto
    const WorkerChoice choice = choose_workers(loader, std::min(cores, 16));
    workers = choice.workers;
    std::cout << "--workers auto: " << format_worker_curve(choice) << "\n";
  }
  const int nb = static_cast<int>(loader.batches_per_epoch());

  ValOptions vo;
  vo.img_size = opt.img_size;
  vo.batch_size = opt.batch_size * 2;
  vo.workers = workers;
  vo.single_cls = opt.single_cls;
  vo.progress = opt.progress;
  vo.cache = lo.cache;
  Validator validator(val_index.records, names, vo);

  TrainSchedule schedule(hyp, opt.epochs, opt.batch_size, nb, opt.cos_lr);
  auto optimizer = smart_optimizer(*model, parse_optimizer_kind(opt.optimizer), hyp.lr0, hyp.momentum, schedule.weight_decay());
  ModelEMA ema(model->copy(), *model);
  YoloLoss compute_loss(loss_config_from_hyp(hyp, nc, static_cast<int>(model->nl()), opt.img_size, model->anchors().to(device)));
  EarlyStopping stopper(opt.patience);

  int start_epoch = 0;
  double best_fitness = 0;
  if (!resume_ckpt.empty()) {
    const CheckpointMeta meta = load_checkpoint(resume_ckpt, model.get(), &ema.module(), optimizer.get());
    start_epoch = meta.epoch + 1;
    best_fitness = meta.best_fitness;
    ema.set_updates(meta.ema_updates);
  }

  CheckpointMeta meta;
  meta.model_yaml = built.model_yaml;
  meta.nc = nc;
  meta.names = names;
  meta.train_options = opt;

  const ResultsCsv csv(save_dir + "/results.csv");
  SystemSampler sampler;
  sampler.start();
  StepTimeline timeline;
  TrainResult result;
  result.save_dir = save_dir;
  auto old_handler = std::signal(SIGINT, on_sigint);

  std::cout << "Image sizes " << opt.img_size << " train, " << opt.img_size << " val\n"
            << "Using " << workers << " dataloader workers, " << torch::get_num_threads() << " compute threads\n"
            << "Logging results to " << save_dir << "\nStarting training for " << opt.epochs << " epochs...\n";

  double train_seconds = 0, val_seconds = 0;
  int val_passes = 0, epochs_run = 0;
  int64_t steps_total = 0;
  ValResult last_val;
  bool stop = false;
  torch::Tensor resident_images, resident_targets;  // --resident: the batch every step reuses
  for (int epoch = start_epoch; epoch < opt.epochs && !stop; ++epoch) {
    model->train();
    const bool mosaic = !(opt.close_mosaic > 0 && epoch >= opt.epochs - opt.close_mosaic);
    loader.set_mosaic(mosaic);
    if (resident_images.defined())
      loader.cancel_epoch();  // --resident: the loader stays idle, so the steps measure compute alone
    else
      loader.start_epoch(epoch);
    torch::Tensor mloss = torch::zeros({3});
    const size_t sample_mark = sampler.samples_taken();
    std::printf("\n%s       Data\n", train_progress_header().c_str());
    ProgressBar bar(nb, stdout, {}, opt.progress ? std::nullopt : std::optional<bool>(false));
    const auto epoch_start = std::chrono::steady_clock::now();
    timeline.start();
    for (int i = 0; i < nb; ++i) {
      const bool reuse = resident_images.defined();  // only ever set with --resident
      const Batch* batch = reuse ? nullptr : loader.next();
      if (!batch && !reuse) break;
      timeline.mark(StepStage::data_wait);
      const TrainSchedule::Step step = schedule.batch(epoch, i);
      apply_schedule_step(*optimizer, step);
      torch::Tensor imgs = reuse ? resident_images : batch_images(*batch, device);
      torch::Tensor targets = reuse ? resident_targets : batch_targets(*batch, device);
      if (opt.resident_batch) resident_images = imgs, resident_targets = targets;
      timeline.mark(StepStage::h2d);

      if (opt.multi_scale) {
        SampleRng rng(static_cast<uint64_t>(opt.seed), static_cast<uint64_t>(epoch), static_cast<uint64_t>(i), /*stream=*/3);
        const int lo_sz = static_cast<int>(opt.img_size * 0.5), hi_sz = static_cast<int>(opt.img_size * 1.5) + gs;
        const int sz = static_cast<int>(lo_sz + rng.below(static_cast<uint64_t>(hi_sz - lo_sz))) / gs * gs;
        const double sf = static_cast<double>(sz) / std::max(imgs.size(2), imgs.size(3));
        if (sf != 1) {
          const int64_t h = static_cast<int64_t>(std::ceil(imgs.size(2) * sf / gs) * gs), w = static_cast<int64_t>(std::ceil(imgs.size(3) * sf / gs) * gs);
          imgs = torch::nn::functional::interpolate(imgs, torch::nn::functional::InterpolateFuncOptions().size(std::vector<int64_t>{h, w}).mode(torch::kBilinear).align_corners(false));
        }
      }

      const std::vector<torch::Tensor> pred = model->forward(imgs);
      timeline.mark(StepStage::forward);
      auto [loss, loss_items] = compute_loss(pred, targets);
      timeline.mark(StepStage::loss);
      loss.backward();
      timeline.mark(StepStage::backward);
      if (step.optimizer_step) {
        torch::nn::utils::clip_grad_norm_(model->parameters(), 10.0);
        optimizer->step();
        optimizer->zero_grad();
        ema.update(*model);
      }
      timeline.mark(StepStage::optimizer);

      mloss = (mloss * i + loss_items.to(torch::kCPU)) / (i + 1);
      bar.update(1, [&] {
        const std::array<double, 3> m = {mloss[0].item<double>(), mloss[1].item<double>(), mloss[2].item<double>()};
        char wait[16];
        std::snprintf(wait, sizeof wait, "%10.1f%%", 100.0 * timeline.epoch().share(StepStage::data_wait));
        return train_progress_desc(epoch, opt.epochs, 0.0, m, targets.size(0), imgs.size(3)) + wait;
      });
      timeline.mark(StepStage::logging);
      timeline.end_step();
      ++steps_total;
      if (g_interrupted || (opt.max_steps > 0 && steps_total >= opt.max_steps)) break;
    }
    bar.close();
    const double epoch_train_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start).count();
    train_seconds += epoch_train_s;
    ++epochs_run;

    if (g_interrupted) {
      // The epoch did not finish: save it as not done, so --resume repeats it from its start.
      meta.epoch = epoch - 1;
      meta.best_fitness = best_fitness;
      meta.ema_updates = ema.updates();
      save_checkpoint(wdir + "/last.pt", meta, *model, &ema.module(), optimizer.get());
      std::cerr << "\nInterrupted: saved " << wdir << "/last.pt; continue with `kestrel train --resume " << wdir << "/last.pt`\n";
      break;
    }
    const bool last_step_budget = opt.max_steps > 0 && steps_total >= opt.max_steps;

    // ---- validation of the EMA model
    const std::array<double, 3> lr = [&] {
      auto v = group_lrs(*optimizer);
      return std::array<double, 3>{v[0], v[1], v[2]};
    }();
    const bool final_epoch = epoch + 1 == opt.epochs || stopper.possible_stop() || last_step_budget;
    const bool validate = (!opt.noval && (epoch + 1 - start_epoch) % std::max(1, opt.val_period) == 0) || final_epoch;
    if (validate && !last_step_budget) {
      timeline.start();
      auto* ema_model = dynamic_cast<DetectionModelImpl*>(&ema.module());
      last_val = validator.run(*ema_model, device, [&](const std::vector<torch::Tensor>& raw, const torch::Tensor& t) {
        return compute_loss(raw, t).second;
      });
      std::cout << format_val_table(last_val.metrics, names, false);
      timeline.mark(StepStage::validation);
      val_seconds += last_val.seconds;
      ++val_passes;
    }
    const double fi = last_val.metrics.fitness();
    stop = stopper(epoch, fi) || last_step_budget;
    if (fi > best_fitness) best_fitness = fi;

    // ---- log and save
    timeline.start();
    EpochResults row;
    row.train_loss = {mloss[0].item<double>(), mloss[1].item<double>(), mloss[2].item<double>()};
    row.precision = last_val.metrics.mp;
    row.recall = last_val.metrics.mr;
    row.map50 = last_val.metrics.map50;
    row.map50_95 = last_val.metrics.map;
    row.val_loss = last_val.loss;
    row.lr = lr;
    csv.append(epoch, row);
    if ((!opt.nosave || final_epoch) && !last_step_budget) {
      meta.epoch = epoch;
      meta.best_fitness = best_fitness;
      meta.ema_updates = ema.updates();
      save_checkpoint(wdir + "/last.pt", meta, *model, &ema.module(), optimizer.get());
      if (best_fitness == fi) fs::copy_file(wdir + "/last.pt", wdir + "/best.pt", fs::copy_options::overwrite_existing);
      if (opt.save_period > 0 && epoch % opt.save_period == 0)
        fs::copy_file(wdir + "/last.pt", wdir + "/epoch" + std::to_string(epoch) + ".pt", fs::copy_options::overwrite_existing);
    }
    timeline.mark(StepStage::logging);
    const StageTotals et = timeline.end_epoch();
    VerdictInput vin{et, sampler.summarize(sample_mark), device.is_cuda(), workers, largest_stage_name(loader.stage_times()),
                     loader.cache() != nullptr};
    std::printf("epoch %d: %.1f s train, %s | %s\n", epoch, epoch_train_s, format_stage_line(et).c_str(), judge(vin).summary.c_str());
    std::fflush(stdout);  // a line per epoch also when stdout is a pipe (tee, a log collector)
    if (stop && epoch + 1 < opt.epochs && !last_step_budget)
      std::cout << "Stopping training early as no improvement observed in last " << opt.patience
                << " epochs. Best results observed at epoch " << stopper.best_epoch() << ".\n";
  }
  sampler.stop();
  std::signal(SIGINT, old_handler);

  result.epochs_run = epochs_run;
  result.best_fitness = best_fitness;
  result.final_metrics = last_val.metrics;
  result.timeline = timeline.run();
  result.seconds_per_epoch = epochs_run ? train_seconds / epochs_run : 0;
  result.seconds_per_val = val_passes ? val_seconds / val_passes : 0;
  result.interrupted = g_interrupted;
  if (g_interrupted) return result;

  std::printf("\n%d epochs completed in %.3f hours (%.2f s per epoch, %.2f s per validation).\n", epochs_run,
              (train_seconds + val_seconds) / 3600, result.seconds_per_epoch, result.seconds_per_val);
  if (last_val.metrics.images) std::cout << format_val_table(last_val.metrics, names, true) << format_val_speed(last_val, opt.img_size, vo.batch_size) << "\n";

  VerdictInput vin{result.timeline, sampler.summarize(0), device.is_cuda(), workers, largest_stage_name(loader.stage_times()),
                   loader.cache() != nullptr};
  const Verdict& verdict = result.verdict = judge(vin);
  std::cout << "Time per step: " << format_stage_line(result.timeline) << "\n"
            << "Verdict: " << verdict.summary << "\nNext: " << verdict.action << "\n";
  write_run_report(save_dir + "/report.json", result.timeline, sampler.samples(), verdict, !opt.noplots ? save_dir + "/timeline.png" : "");
  std::cout << "Results saved to " << save_dir << "\n";
  return result;
}

}  // namespace kestrel
