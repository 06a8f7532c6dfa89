// Trainer set-up stages, in train.py's order: run folder and options, data, model, loaders,
// optimization, and the restored state of a resumed run.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "core/cpu_cores.h"
#include "data/index/demo_dataset.h"
#include "data/index/index_report.h"
#include "data/index/scan.h"
#include "data/index/scan_report.h"
#include "data/io/cache_dir.h"
#include "data/loader/worker_tuning.h"
#include "device/device.h"
#include "distributed/launch.h"
#include "model/model_info.h"
#include "profile/doctor.h"
#include "report/labels_plot.h"
#include "report/progress_callback.h"
#include "train/amp_choice.h"
#include "train/auto_anchor.h"
#include "train/auto_batch.h"
#include "train/optimizer.h"
#include "train/trainer.h"

namespace fs = std::filesystem;

namespace kestrel {

namespace {

// Loader threads and LibTorch's compute threads share the cores. The compute threads get all cores
// (OpenMP threads sleep at barriers thanks to OMP_WAIT_POLICY=PASSIVE), so the loader takes the cycles
// compute leaves idle and, beyond those, time from compute (hence --cache auto).
int default_workers(int cores) { return std::max(1, std::min(8, cores)); }

// The newest last.pt under project, or "" when there is none.
std::string find_latest_last_pt(const std::string& project) {
  std::string best;
  fs::file_time_type best_time{};
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(project, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().filename() != "last.pt") continue;
    const auto t = fs::last_write_time(it->path(), ec);
    if (best.empty() || t > best_time) best = it->path().string(), best_time = t;
  }
  return best;
}

std::string latest_last_pt(const std::string& project) {
  const std::string best = find_latest_last_pt(project);
  if (best.empty()) throw std::runtime_error("--resume: no last.pt found under " + project);
  return best;
}

// torchrun --max-restarts: a restarted job goes on from the newest unfinished run under project.
std::string restart_checkpoint(const std::string& project) {
  const std::string last = find_latest_last_pt(project);
  if (last.empty() || !load_checkpoint(last, nullptr, nullptr, nullptr).has_optimizer) return "";
  return last;
}

std::string hex(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

// What every rank of a job must agree on: the options (less the per-process ones) and the data.
std::string options_fingerprint(TrainOptions o) {
  o.progress = true;
  const std::string text = nlohmann::json(o).dump();
  return hex(fnv1a64(text.data(), text.size()));
}

std::string dataset_fingerprint(const DatasetIndex& train, const DatasetIndex& val) {
  uint64_t h = fnv1a64(nullptr, 0);  // chained over every path and label: no copy of the index
  for (const DatasetIndex* index : {&train, &val})
    for (const ImageRecord& r : index->records) {
      h = fnv1a64(r.image_path.c_str(), r.image_path.size() + 1, h);
      h = fnv1a64(r.labels.data(), r.labels.size() * sizeof(Label), h);
    }
  return hex(h) + " over " + std::to_string(train.records.size()) + "+" + std::to_string(val.records.size()) + " images";
}

// train.py: one class named 'item' for --single-cls, unless the data has a single name already.
std::vector<std::string> class_names(const DatasetConfig& data, bool single_cls) {
  if (single_cls && data.names.size() != 1) return {"item"};
  return data.names;
}

// --cache auto: RAM when the train and val images are small next to the free memory, said in words.
CacheMode choose_cache(const std::string& flag, const DatasetIndex& train, const DatasetIndex& val, int img_size) {
  if (flag != "auto") return parse_cache_mode(flag);
  std::string why;
  const size_t bytes = estimate_cache_bytes(train.records, img_size) + estimate_cache_bytes(val.records, img_size);
  const CacheMode mode = choose_auto_cache(bytes, mem_available_bytes(), &why);
  std::cout << "--cache auto: " << why << std::endl;  // before the cache's own lines on stderr
  return mode;
}

}  // namespace

Trainer::Trainer(TrainOptions options) : opt_(std::move(options)) {
  setup_run();
  prepare_data();
  prepare_model();
  prepare_batch();
  prepare_loaders();
  prepare_optimization();
  restore();
  arm_auto_checks();
}

// A data-parallel job (torchrun's variables, or `--nproc-per-node`): join the other ranks, check they
// run the same options, and under torchrun --max-restarts go on from the run a failure interrupted.
void Trainer::join_job() {
  const int local_rank = world_from_env().local_rank;
  const torch::Device device = parse_device(rank_device(opt_.device, local_rank), local_rank);
  dp_ = DataParallel::from_environment(std::chrono::milliseconds(static_cast<int64_t>(opt_.dist_timeout * 1000)), device);
  dp_->quiet_secondary_ranks();
  if (!dp_->active()) return;
  const World& w = dp_->world();
  std::cout << "Data parallel: " << w.size << " processes (" << w.local_size << " on this machine), "
            << dp_->group()->backend() << " over "
            << w.master_addr << ":" << w.master_port << ", global batch " << opt_.batch_size << "\n";
  if (opt_.resume.empty() && w.restart_count > 0) {
    opt_.resume = dp_->from_main("restart", dp_->main() ? restart_checkpoint(opt_.project) : "");
    if (!opt_.resume.empty())
      std::cout << "torchrun restart " << w.restart_count << ": resuming the interrupted run from " << opt_.resume << "\n";
  }
  opt_.world_size = w.size;
  dp_->check_same("options", options_fingerprint(opt_));
}

void Trainer::setup_run() {
  join_job();
  if (!opt_.resume.empty()) {
    // Rank 0 finds the file; with several machines it must be at that path on each (a shared folder).
    resume_ckpt_ = dp_->from_main("resume", opt_.resume == "auto" && dp_->main() ? latest_last_pt(opt_.project) : opt_.resume);
    const CheckpointMeta meta = load_checkpoint(resume_ckpt_, nullptr, nullptr, nullptr);
    if (!meta.has_optimizer)
      throw std::runtime_error(resume_ckpt_ + ": this run is finished (its checkpoint is stripped), nothing to resume");
    const bool progress = opt_.progress;
    const double dist_timeout = opt_.dist_timeout;
    opt_ = meta.train_options.get<TrainOptions>();
    opt_.progress = progress, opt_.dist_timeout = dist_timeout;
    if (opt_.world_size != dp_->size())
      throw std::runtime_error(resume_ckpt_ + " was trained by " + std::to_string(opt_.world_size) + " process(es), this job has " +
                               std::to_string(dp_->size()) + ": resume with the same --nproc-per-node and --nnodes");
    opt_.resume = resume_ckpt_;
    const ResumePoint at = meta.resume_point.empty() ? ResumePoint{meta.epoch + 1} : meta.resume_point.get<ResumePoint>();
    std::cout << "Resuming training from " << resume_ckpt_ << " (epoch " << at.epoch
              << (at.batch ? ", batch " + std::to_string(at.batch) : std::string()) << ")\n";
  }
  if (opt_.data.empty()) {
    opt_.data = ensure_demo_dataset();
    std::cout << "No --data given: training on the built-in demo dataset " << opt_.data << "\n";
  }
  device_ = parse_device(rank_device(opt_.device, dp_->world().local_rank), dp_->world().local_rank);  // one GPU per process
  set_cuda_numerics(device_, opt_.fast);
  uploader_ = std::make_unique<BatchUploader>(device_);
  gpu_clock_ = std::make_unique<DeviceStageClock>(device_);
  sampler_.select_gpu(pci_bus_id(device_));
  // The ranks on one machine share its cores.
  cores_ = std::max(1, static_cast<int>(usable_cores()) / dp_->world().local_size);
  torch::set_num_threads(cores_);
  torch::manual_seed(opt_.seed);
  workers_ = opt_.workers >= 0 ? opt_.workers : default_workers(cores_);  // auto: refined once the loader exists
  if (!resume_ckpt_.empty()) {
    run_.weights_dir = fs::path(resume_ckpt_).parent_path().string();
    run_.save_dir = fs::path(run_.weights_dir).parent_path().string();
  } else if (dp_->main()) {
    run_ = make_run_dir(opt_.project, opt_.name, opt_.exist_ok);
  }
  run_.save_dir = dp_->from_main("save_dir", run_.save_dir);  // only rank 0 writes files
  run_.weights_dir = run_.save_dir + "/weights";
  if (dp_->main()) fs::create_directories(run_.weights_dir);
}

void Trainer::prepare_data() {
  data_ = load_dataset_config(opt_.data);
  nc_ = opt_.single_cls ? 1 : data_.nc;
  names_ = class_names(data_, opt_.single_cls);
  train_index_ = build_index(data_.train, data_.nc, opt_.single_cls);
  val_index_ = build_index(data_.val, data_.nc, opt_.single_cls);
  for (const auto& w : train_index_.warnings) std::cerr << "WARNING: " << w << "\n";
  for (const auto& w : val_index_.warnings) std::cerr << "WARNING: " << w << "\n";
  std::cout << "train: " << format_index_stats(train_index_.stats) << "\n";
  std::cout << "val: " << format_index_stats(val_index_.stats) << "\n";
  if (dp_->active()) dp_->check_same("dataset", dataset_fingerprint(train_index_, val_index_));
  if (dp_->active() && dp_->main() && !train_index_.records.empty()) {  // every rank reads the images
    bool network = false;
    const std::string images = fs::path(train_index_.records.front().image_path).parent_path().string();
    const std::string fs_type = filesystem_type(images, &network);
    if (network)
      std::cerr << "WARNING: " << dp_->size() << " processes read " << images << " on a network file system (" << fs_type
                << "): copy the data to each machine's disk, or cache it (--cache disk: one file per machine)\n";
  }
  if (!opt_.noplots && resume_ckpt_.empty() && dp_->main()) {
    std::vector<Label> labels;
    for (const ImageRecord& r : train_index_.records) labels.insert(labels.end(), r.labels.begin(), r.labels.end());
    write_labels_plot(labels, names_, run_.save_dir + "/labels.jpg");
  }
  if (train_index_.records.empty()) throw std::runtime_error(opt_.data + ": no training images found");
  if (!opt_.scan || !dp_->main()) return;  // one scan report per job
  // The health check (data/scan.h): the index already skips what cannot be used; this says what is wrong.
  // Decodes every image once per dataset version, then costs a stat per file (cached).
  ProgressCallback progress("scan");
  ScanOptions so;
  so.nc = data_.nc, so.single_cls = opt_.single_cls;
  if (opt_.progress) so.progress = progress.callback();
  std::vector<std::string> sources = data_.train;
  sources.insert(sources.end(), data_.val.begin(), data_.val.end());
  const ScanReport scan = scan_dataset(sources, so);
  progress.close();
  std::cout << "scan: " << format_scan_summary(scan)
            << (scan.faults.empty() ? "" : "; every fault: kestrel scan --data " + opt_.data) << "\n";
}

void Trainer::prepare_model() {
  const std::string cfg = opt_.cfg.empty() && opt_.weights.empty() ? "yolov5s.yaml" : opt_.cfg;
  built_ = resume_ckpt_.empty() ? build_model(cfg, opt_.weights, nc_) : checkpoint_architecture(resume_ckpt_);
  model_ = built_.model;
  if (model_->nc() != nc_)
    throw std::runtime_error(resume_ckpt_ + " was trained on " + std::to_string(model_->nc()) + " classes, but " +
                             opt_.data + " now has " + std::to_string(nc_) + ": resume with the data it was trained on");
  model_->set_names(names_);
  if (resume_ckpt_.empty()) std::cout << describe_build(built_, opt_.weights);
  std::cout << model_summary(*model_).line() << "\n";
  model_->to(device_);
  model_->set_memory_format(torch::MemoryFormat::ChannelsLast);
  // --freeze: layers 0..N-1 (one number) or the listed layers.
  std::vector<int> frozen = opt_.freeze.size() == 1 ? std::vector<int>{} : opt_.freeze;
  if (opt_.freeze.size() == 1)
    for (int i = 0; i < opt_.freeze[0]; ++i) frozen.push_back(i);
  for (auto& p : model_->named_parameters())
    for (int f : frozen)
      if (p.key().rfind("model." + std::to_string(f) + ".", 0) == 0) {
        p.value().set_requires_grad(false);
        std::cout << "freezing " << p.key() << "\n";
      }
  gs_ = std::max(32, static_cast<int>(model_->stride().back()));
  if (opt_.img_size % gs_) {
    const int fixed = (opt_.img_size + gs_ - 1) / gs_ * gs_;
    std::cerr << "WARNING: --img " << opt_.img_size << " must be a multiple of max stride " << gs_ << ", updating to " << fixed << "\n";
    opt_.img_size = fixed;
  }
  choose_recipe();
  if (resume_ckpt_.empty()) check_anchors();
  dp_->broadcast_state(*model_);  // every rank starts from rank 0's weights and anchors
  if (opt_.sync_bn && dp_->active())
    std::cout << "Using SyncBatchNorm() on " << dp_->use_sync_batch_norm(*model_) << " BatchNorm layers\n";
}

void Trainer::choose_recipe() {
  const bool ultralytics = model_->config().ultralytics;
  const Hyp base = ultralytics ? ultralytics_hyp() : Hyp{};
  hyp_ = opt_.hyp.empty() ? base : load_hyp(opt_.hyp, base);
  if (opt_.label_smoothing > 0) hyp_.label_smoothing = opt_.label_smoothing;
  if (opt_.close_mosaic < 0) opt_.close_mosaic = ultralytics ? 10 : 0;  // what --resume repeats
  if (ultralytics && opt_.label_smoothing > 0)
    std::cerr << "WARNING: --label-smoothing has no effect on " << model_->config().name << " (Ultralytics' loss has none)\n";
}

// train.py's check_anchors, before the loss copies the anchors: a model whose yaml only gives an
// anchor count must get anchors, so --noautoanchor cannot apply to it.
void Trainer::check_anchors() {
  if (model_->anchor_free()) return;
  const bool placeholder = model_->config().anchors.kind == Arg::Kind::Int;
  if (opt_.noautoanchor && !placeholder) return;
  const torch::Tensor pixels = (model_->anchors() * model_->stride_tensor().to(device_).view({-1, 1, 1})).cpu().contiguous();
  std::vector<AnchorWH> current(static_cast<size_t>(pixels.numel() / 2));
  std::memcpy(current.data(), pixels.data_ptr<float>(), current.size() * sizeof(AnchorWH));
  const AutoAnchorResult fit = auto_anchor(train_index_.records, current, opt_.img_size, hyp_.anchor_t, opt_.seed, placeholder);
  std::cout << fit.report;
  if (!fit.replaced) return;
  const torch::Tensor fresh = torch::from_blob(const_cast<AnchorWH*>(fit.anchors.data()), pixels.sizes(), torch::kFloat32);
  model_->set_pixel_anchors(fresh.clone().to(device_));
}

void Trainer::prepare_batch() {
  if (opt_.batch_size == 0 || opt_.batch_size < -1)
    throw std::runtime_error("--batch-size " + std::to_string(opt_.batch_size) + ": give a positive batch, or -1 for AutoBatch");
  StepBenchOptions shape;
  shape.img_size = opt_.img_size;
  shape.batch_size = opt_.batch_size > 0 ? opt_.batch_size : 16;
  shape.device = device_;
  shape.hyp = hyp_;
  if (dp_->active() && opt_.batch_size < 0)
    throw std::runtime_error("AutoBatch (--batch-size -1) measures one process: give the job's global --batch-size, a multiple of " +
                             std::to_string(dp_->size()));
  if (opt_.batch_size % dp_->size())
    throw std::runtime_error("--batch-size " + std::to_string(opt_.batch_size) + " must be a multiple of the " +
                             std::to_string(dp_->size()) + " processes (it is the global batch, split over them)");
  if (dp_->active()) shape.batch_size /= dp_->size();
  amp_choice_ = choose_amp(opt_.amp, *model_, shape);
  precision_ = shape.precision = parse_precision(dp_->from_main("amp", precision_name(amp_choice_.precision)));  // rank 0's measurement
  opt_.amp = precision_ == Precision::fp32 ? "off" : precision_name(precision_);  // what --resume repeats
  std::cout << amp_choice_.why << "\n";
  if (opt_.batch_size < 0) {
    // The memory a batch fills: the GPU's on a GPU, the machine's on a CPU.
    const double memory = device_.is_cuda() ? device_memory_available(device_) : static_cast<double>(mem_available_bytes());
    const AutoBatchChoice choice = auto_batch(*model_, shape, static_cast<int>(train_index_.records.size()), memory);
    std::cout << choice.why << "\n";
    opt_.batch_size = choice.batch;
  }
  optimizer_choice_ = choose_optimizer(opt_.optimizer, model_->config().ultralytics, hyp_, nc_,
                                       static_cast<int64_t>(train_index_.records.size()), opt_.batch_size, opt_.nbs, opt_.epochs);
  hyp_.lr0 = optimizer_choice_.lr0, hyp_.warmup_bias_lr = optimizer_choice_.warmup_bias_lr;
  std::cout << optimizer_choice_.line << "\n";
  const BatchPlan plan = make_batch_plan(hyp_, opt_.batch_size, opt_.nbs, parse_lr_scale(opt_.lr_scale));
  hyp_.lr0 = plan.lr0;  // the schedule derives accumulation and weight decay from the same rule
  std::cout << "Batch: " << plan.line() << "\n";
  scaler_ = GradScaler(precision_ == Precision::fp16);
  divergence_ = DivergenceWatch(scaler_.enabled());
}

void Trainer::prepare_loaders() {
  cache_ = choose_cache(opt_.cache, train_index_, val_index_, opt_.img_size);
  LoaderOptions lo;
  lo.img_size = opt_.img_size;
  lo.batch_size = opt_.batch_size / dp_->size();  // --batch-size is the job's global batch
  lo.shard = dp_->world().rank, lo.shards = dp_->size();
  lo.workers = workers_;
  lo.prefetch = opt_.prefetch;
  lo.augment = true;
  lo.rect = opt_.rect;
  lo.shuffle = !opt_.rect;
  lo.pad = 0.0;
  lo.seed = static_cast<uint64_t>(opt_.seed);
  lo.cache = cache_;
  lo.hyp = hyp_;
  lo.ultralytics = model_->config().ultralytics;
  lo.batch_memory = uploader_->host_memory();  // pinned on a GPU: the copies overlap the steps
  // The disk cache is one file per machine: its local rank 0 writes it, the others map it after.
  const bool waits_for_cache = cache_ == CacheMode::disk && dp_->world().local_rank != 0;
  if (waits_for_cache) dp_->barrier();
  loader_ = std::make_unique<Loader>(train_index_.records, lo);
  if (cache_ == CacheMode::disk && !waits_for_cache) dp_->barrier();
  if (cache_ == CacheMode::ram && dp_->world().local_size > 1)
    std::cout << "--cache ram: each of this machine's " << dp_->world().local_size
              << " processes holds all the training images in its own memory (--cache disk shares one file)\n";
  if (opt_.workers < 0) {  // --workers auto
    worker_choice_ = choose_workers(*loader_, std::min(cores_, 16));
    workers_ = opt_.workers = worker_choice_.workers;  // what --resume repeats
    std::cout << "--workers auto: " << format_worker_curve(worker_choice_) << "\n";
  }
  nb_ = static_cast<int>(loader_->batches_per_epoch());

  val_options_.img_size = opt_.img_size;
  val_options_.batch_size = lo.batch_size * 2;
  val_options_.workers = workers_;
  val_options_.single_cls = opt_.single_cls;
  val_options_.progress = opt_.progress;
  val_options_.cache = cache_;
  val_options_.ultralytics = lo.ultralytics;
  val_options_.precision = precision_;  // as train.py validates with half=amp
  if (!dp_->main()) return;  // rank 0 validates
  fit_max_det(val_options_, {{"train", most_objects(train_index_.records)}, {"val", most_objects(val_index_.records)}});
  validator_ = std::make_unique<Validator>(val_index_.records, names_, val_options_);
}

void Trainer::prepare_optimization() {
  schedule_ = std::make_unique<TrainSchedule>(hyp_, opt_.epochs, opt_.batch_size, nb_, opt_.cos_lr, opt_.nbs,
                                              model_->config().ultralytics);
  optimizer_ = smart_optimizer(*model_, optimizer_choice_.kind, hyp_.lr0, optimizer_choice_.momentum, schedule_->weight_decay());
  dp_->sync_gradients_of(model_->parameters());
  ema_ = std::make_unique<ModelEMA>(model_->copy(), *model_);
  loss_ = make_detection_loss(*model_, hyp_, opt_.img_size, device_);
  // A sparsity run's accuracy dips by design while channels are driven to 0: patience would end it
  // early and keep a best.pt from before the penalty took hold.
  stopper_ = EarlyStopping(opt_.sparsity > 0 ? 0 : opt_.patience);
  if (opt_.sparsity > 0) {
    const PruneOptions target = sparsity_target_of(opt_);
    sparsity_ = SparsityTraining(*model_, opt_.sparsity, opt_.sparsity_decay, opt_.epochs, target);
    std::cout << "BN sparsity: " << opt_.sparsity << " x sign(gamma) on the prunable BatchNorm scales"
              << (target.ratio > 0 ? " `kestrel prune " + prune_flags(target) + "` would remove (chosen each epoch)" : "")
              << (opt_.sparsity_decay ? ", falling to a tenth by the last epoch" : "") << "; early stopping off\n";
    // Before a fresh run only (a resumed one has its closing line), and for SGD, whose steps the
    // reach describes: Adam's are normalized.
    if (resume_ckpt_.empty() && optimizer_choice_.kind == OptimizerKind::SGD)
      if (const std::string r = sparsity_.reach_report(sparsity_.reach(*schedule_, opt_.epochs, nb_)); !r.empty())
        std::cout << r << "\n";
  }
  mloss_ = torch::zeros({3});
  meta_.model_yaml = built_.model_yaml;
  meta_.model_name = model_->config().name;
  meta_.pruned_shapes = model_->config().pruned_shapes;
  meta_.nc = nc_;
  meta_.names = names_;
  record_resolved_options();  // --amp, --batch and --workers resolved
}

void Trainer::restore() {
  if (resume_ckpt_.empty()) return;
  const CheckpointMeta meta = load_checkpoint(resume_ckpt_, model_.get(), &ema_->module(), optimizer_.get());
  ema_->set_updates(meta.ema_updates);
  best_fitness_ = meta.best_fitness;
  grads_pending_ = meta.has_grads && load_gradients(resume_ckpt_, *model_);
  if (meta.resume_point.empty()) {  // a checkpoint from before exact resume: its epoch boundary, as train.py
    point_.epoch = meta.epoch + 1;
  } else {
    point_ = meta.resume_point.get<ResumePoint>();
    schedule_->set_last_optimizer_step(point_.last_opt_step);
    scaler_.restore({point_.loss_scale, point_.scale_growth_tracker});
    stopper_.restore(point_.stopper);
    last_val_.metrics.mp = point_.val_metrics[0], last_val_.metrics.mr = point_.val_metrics[1];
    last_val_.metrics.map50 = point_.val_metrics[2], last_val_.metrics.map = point_.val_metrics[3];
    last_val_.loss = point_.val_loss;
    mloss_ = torch::tensor(std::vector<float>(point_.mloss.begin(), point_.mloss.end()));
  }
  if (dp_->main()) ResultsCsv(run_.results_csv(), csv_layout()).keep_epochs_before(point_.epoch);
}

}  // namespace kestrel
