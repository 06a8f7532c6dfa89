// train.py's loop. Order of operations per batch, as YOLOv5: schedule (warmup lr/momentum),
// uint8 batch -> float/255 on the device, optional multi-scale resize, forward, loss, backward,
// and every `accumulate` batches: clip at norm 10, step, zero grads, EMA update. After each epoch:
// validation of the EMA model, results.csv, last.pt/best.pt.
#include "train/trainer.h"

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "core/elapsed.h"
#include "data/augment/rng.h"
#include "device/batch_upload.h"
#include "profile/report_json.h"
#include "report/batch_plot.h"
#include "report/progress_bar.h"
#include "report/results_plot.h"
#include "train/optimizer.h"

namespace fs = std::filesystem;

namespace kestrel {

namespace {

// The signal that asked the run to stop: SIGINT (Ctrl-C) or SIGTERM (what schedulers send before
// they kill a job); 0 while none did.
volatile std::sig_atomic_t g_interrupted = 0;
void on_stop_signal(int signal) { g_interrupted = signal; }

// --multi-scale: a size in [0.5, 1.5] x img (a multiple of gs) drawn from (seed, epoch, batch).
torch::Tensor multi_scale(const torch::Tensor& imgs, int img_size, int gs, int seed, int epoch, int i) {
  SampleRng rng(static_cast<uint64_t>(seed), static_cast<uint64_t>(epoch), static_cast<uint64_t>(i), /*stream=*/3);
  const int lo = static_cast<int>(img_size * 0.5), hi = static_cast<int>(img_size * 1.5) + gs;
  const int sz = static_cast<int>(lo + rng.below(static_cast<uint64_t>(hi - lo))) / gs * gs;
  const double sf = static_cast<double>(sz) / std::max(imgs.size(2), imgs.size(3));
  if (sf == 1) return imgs;
  const int64_t h = static_cast<int64_t>(std::ceil(imgs.size(2) * sf / gs) * gs);
  const int64_t w = static_cast<int64_t>(std::ceil(imgs.size(3) * sf / gs) * gs);
  namespace F = torch::nn::functional;
  return F::interpolate(imgs, F::InterpolateFuncOptions().size(std::vector<int64_t>{h, w}).mode(torch::kBilinear).align_corners(false));
}

std::array<double, 3> values3(const torch::Tensor& t) {
  return {t[0].item<double>(), t[1].item<double>(), t[2].item<double>()};
}

}  // namespace

TrainResult train(TrainOptions options) { return Trainer(std::move(options)).run(); }

TrainResult Trainer::run() {
  sampler_.start();
  const auto old_int = std::signal(SIGINT, on_stop_signal);
  const auto old_term = std::signal(SIGTERM, on_stop_signal);
  std::cout << "Image sizes " << opt_.img_size << " train, " << opt_.img_size << " val\n"
            << "Using " << workers_ << " dataloader workers, " << torch::get_num_threads() << " compute threads\n"
            << "Logging results to " << run_.save_dir << "\nStarting training for " << opt_.epochs << " epochs...\n";
  last_save_ = train_start_ = std::chrono::steady_clock::now();
  for (int epoch = point_.epoch; epoch < opt_.epochs && !stop_ && !interrupted_; ++epoch) {
    train_epoch(epoch);
    if (interrupted_) break;
    end_epoch(epoch);
  }
  sampler_.stop();
  std::signal(SIGINT, old_int);
  std::signal(SIGTERM, old_term);
  return finish();
}

void Trainer::train_epoch(int epoch) {
  model_->train();
  loader_->set_mosaic(!(opt_.close_mosaic > 0 && epoch >= opt_.epochs - opt_.close_mosaic));
  if (interrupt_requested()) {  // Ctrl-C while the previous epoch was closed: last.pt is that epoch's end
    interrupted_ = true;
    return;
  }
  const int first = epoch == point_.epoch ? point_.batch : 0;  // a resumed epoch goes on where it stopped
  if (pending_workers_) {  // the workers check's setting: loader threads start with an epoch
    loader_->set_workers(workers_ = pending_workers_);
    pending_workers_ = 0;
  }
  if (workers_check_) workers_check_->skip(1);  // the epoch's first batch waits for the loader to fill
  if (resident_images_.defined())
    loader_->cancel_epoch();  // --resident: the loader stays idle, so the steps measure compute alone
  else
    loader_->start_epoch(epoch, static_cast<size_t>(first));
  if (first == 0) mloss_ = torch::zeros({3});
  epoch_sample_mark_ = sampler_.samples_taken();
  if (sparsity_.enabled()) sparsity_.start_epoch();  // a resumed epoch chooses from the weights it resumes with
  std::printf("\n%s       Data\n", train_progress_header(loss_names(*model_)).c_str());
  ProgressBar bar(nb_ - first, stdout, {}, opt_.progress ? std::nullopt : std::optional<bool>(false));
  const auto epoch_start = std::chrono::steady_clock::now();
  timeline_.start();
  // Batch i + 1 is taken from the loader and its copy to the device queued before step i runs, so
  // that on a GPU the copy overlaps the step (device/batch_upload.h).
  DeviceBatch next = fetch_batch(epoch, first);
  StageTotals before_step;  // the epoch's totals before the step: each step's own times
  for (int i = first; i < nb_; ++i) {
    DeviceBatch current = std::move(next);
    if (!current && !resident_images_.defined()) break;
    uploader_->release_host(current);  // the loader may refill its buffer now
    if (i + 1 < nb_) next = fetch_batch(epoch, i + 1);
    train_step(epoch, i, current);
    bar.update(1, [&] {
      char wait[16];
      std::snprintf(wait, sizeof wait, "%10.1f%%", 100.0 * timeline_.epoch().share(StepStage::data_wait));
      return train_progress_desc(epoch, opt_.epochs, 0.0, values3(mloss_), last_instances_, last_size_) + wait;
    });
    timeline_.mark(StepStage::logging);
    timeline_.end_step();
    count_step(before_step, timeline_.epoch(), i == first);
    before_step = timeline_.epoch();
    if (++steps_total_ == opt_.untimed_steps) timeline_.discard(), before_step = {}, first_steps_ = steady_steps_ = {};
    // One exchange per step tells every rank of a job the same: stop for Ctrl-C, checkpoint now.
    const bool save_due = opt_.save_minutes > 0 && seconds_since(last_save_) >= 60 * opt_.save_minutes;
    const uint32_t agreed = dp_->any_bits((g_interrupted != 0 ? 1u : 0u) | (save_due ? 2u : 0u));
    if (agreed & 1u) {
      interrupted_ = true;
      save_mid_epoch(epoch, i + 1, /*in_background=*/false);
      break;
    }
    if (opt_.max_steps > 0 && steps_total_ >= opt_.max_steps) {
      step_budget_spent_ = stop_ = true;
      break;
    }
    if (agreed & 2u) save_mid_epoch(epoch, i + 1, /*in_background=*/true);
  }
  bar.close();
  epoch_train_seconds_ = seconds_since(epoch_start);
  train_seconds_ += epoch_train_seconds_;
  ++epochs_run_;
}

DeviceBatch Trainer::fetch_batch(int epoch, int i) {
  if (resident_images_.defined()) return {};  // --resident: every step reuses the first batch
  const Batch* batch = loader_->next();
  timeline_.mark(StepStage::data_wait);
  if (!batch) return {};
  if (epoch == 0 && i < 3 && !opt_.noplots && dp_->main()) plot_train_batch(i, *batch);
  DeviceBatch on_device = uploader_->upload(*batch);
  timeline_.mark(StepStage::h2d);
  return on_device;
}

void Trainer::train_step(int epoch, int i, DeviceBatch& batch) {
  const TrainSchedule::Step step = schedule_->batch(epoch, i);
  apply_schedule_step(*optimizer_, step);
  gpu_clock_->begin_step();
  const bool reuse = resident_images_.defined();  // only ever set with --resident
  torch::Tensor imgs = reuse ? resident_images_ : uploader_->ready(batch);
  const torch::Tensor targets = reuse ? resident_targets_ : batch.targets;
  if (opt_.resident_batch) resident_images_ = imgs, resident_targets_ = targets;
  timeline_.mark(StepStage::h2d);
  gpu_clock_->mark(StepStage::h2d);
  if (opt_.multi_scale) imgs = multi_scale(imgs, opt_.img_size, gs_, opt_.seed, epoch, i);
  if (sparsity_.enabled() && dp_->main()) sparsity_.keep_batch(imgs, i, nb_);  // for the epoch's recalibration

  std::vector<torch::Tensor> pred;
  {
    Autocast autocast(precision_, device_);  // the Detect head hands back fp32: the loss runs in fp32
    pred = model_->forward(imgs);
  }
  timeline_.mark(StepStage::forward);
  gpu_clock_->mark(StepStage::forward);
  auto [loss, loss_items] = loss_(pred, targets);
  if (dp_->active()) loss = loss * dp_->size();  // as train.py: the all-reduce averages over ranks
  timeline_.mark(StepStage::loss);
  gpu_clock_->mark(StepStage::loss);
  if (step.optimizer_step) dp_->arm_gradient_sync();  // the window's gradients are exchanged once, during this backward
  scaler_.scale(loss).backward();
  grads_pending_ = true;
  timeline_.mark(StepStage::backward);
  gpu_clock_->mark(StepStage::backward);
  dp_->finish_gradient_sync();
  timeline_.mark(StepStage::communication);
  gpu_clock_->mark(StepStage::communication);
  if (step.optimizer_step) optimizer_step(epoch, i, reuse ? nullptr : &batch.host);
  timeline_.mark(StepStage::optimizer);
  gpu_clock_->mark(StepStage::optimizer);
  gpu_clock_->end_step();

  torch::Tensor items = loss_items.to(torch::kCPU);
  if (!items.isfinite().all().item<bool>()) items = mloss_;  // a skipped step leaves the epoch's means alone
  mloss_ = (mloss_ * i + items) / (i + 1);
  last_instances_ = targets.size(0);
  last_size_ = imgs.size(3);
}

// The gradients of one accumulation window are complete here: what acts on them (averaging across
// processes, penalties on them) goes before the clip.
void Trainer::optimizer_step(int epoch, int i, const Batch* batch) {
  if (sparsity_.enabled()) sparsity_.add_penalty(epoch, scaler_.enabled() ? scaler_.state().scale : 1.0);
  const bool stepped = scaler_.step(*optimizer_, model_->parameters(), 10.0);
  optimizer_->zero_grad();
  grads_pending_ = false;
  ema_->update(*model_);  // as train.py, also after a step the scaler skipped (the model is unchanged)
  if (divergence_.record(stepped)) {
    DivergenceReport r;
    r.epoch = epoch, r.batch = i, r.step = static_cast<long long>(epoch) * nb_ + i;
    r.consecutive = divergence_.consecutive();
    r.precision = precision_name(precision_);
    r.scaler = scaler_.enabled(), r.scale = scaler_.state().scale;
    r.lr0 = hyp_.lr0, r.data = opt_.data;
    if (fs::exists(run_.last_pt())) r.last_good = run_.last_pt();
    r.labels_checked = batch != nullptr;
    if (batch) r.label_notes = odd_label_notes(*batch, nc_), r.images = batch->paths;
    throw std::runtime_error(divergence_message(r));
  }
  if (!stepped && !scaler_.enabled())
    std::fprintf(stderr, "\nWARNING: inf/NaN gradients at epoch %d, batch %d: optimizer step skipped\n", epoch, i);
}

bool Trainer::interrupt_requested() { return dp_->any(g_interrupted != 0); }

void Trainer::validate(int epoch, bool final_epoch) {
  const bool due = !opt_.noval && (epoch + 1) % std::max(1, opt_.val_period) == 0;
  // A run its step budget ended (profile, tune's trials) validates once at the end unless --noval:
  // that is how `kestrel tune` times a validation pass.
  if (!(due || final_epoch) || (step_budget_spent_ && opt_.noval)) return;
  timeline_.start();
  auto* ema_model = dynamic_cast<DetectionModelImpl*>(&ema_->module());
  // Statistics that match the layers, for this validation and the checkpoints after it (sparsity.h).
  if (sparsity_.enabled()) sparsity_.recalibrate(*ema_model, precision_, device_);
  ValOutputs outputs;
  if (final_epoch && !opt_.noplots) outputs.plot_dir = run_.save_dir;  // val.py's plots, once, at the end
  last_val_ = validator_->run(*ema_model, device_, [&](const std::vector<torch::Tensor>& raw, const torch::Tensor& t) {
    return loss_(raw, t).second;
  }, outputs);
  std::cout << format_val_table(last_val_.metrics, names_, false) << std::flush;
  timeline_.mark(StepStage::validation);
  val_seconds_ += last_val_.seconds;
  ++val_passes_;
}

void Trainer::end_epoch(int epoch) {
  const std::vector<double> lr = logged_group_lrs(*optimizer_, model_->config().ultralytics);
  const bool final_epoch = epoch + 1 == opt_.epochs || stopper_.possible_stop() || step_budget_spent_;
  if (grads_pending_) dp_->average_gradients();  // the checkpoint's gradients are the job's
  if (!dp_->main()) {  // rank 0 validates, logs and saves; the others wait for its word on stopping
    stop_ = dp_->any(false) || step_budget_spent_;
    timeline_.end_epoch();
    return;
  }
  validate(epoch, final_epoch);
  const double fi = last_val_.metrics.fitness();
  stop_ = stopper_(epoch, fi) || step_budget_spent_;
  if (fi > best_fitness_) best_fitness_ = fi;

  timeline_.start();
  EpochResults row;
  row.seconds = seconds_since(train_start_);
  row.train_loss = values3(mloss_);
  row.precision = last_val_.metrics.mp;
  row.recall = last_val_.metrics.mr;
  row.map50 = last_val_.metrics.map50;
  row.map50_95 = last_val_.metrics.map;
  row.val_loss = last_val_.loss;
  row.lr = lr;
  if (sparsity_.enabled()) {
    row.extra.emplace_back(SparsityTraining::kCsvKey, sparsity_.share_below(SparsityTraining::kGammaThreshold));
    sparsity_.record_epoch(epoch);
  }
  ResultsCsv(run_.results_csv(), csv_layout()).append(epoch, row);
  if ((!opt_.nosave || final_epoch) && !step_budget_spent_) {
    write_last_pt(checkpoint_bytes(epoch + 1, 0));
    wait_for_checkpoint();
    last_save_ = std::chrono::steady_clock::now();
    if (best_fitness_ == fi) fs::copy_file(run_.last_pt(), run_.best_pt(), fs::copy_options::overwrite_existing);
    if (opt_.save_period > 0 && epoch % opt_.save_period == 0)
      fs::copy_file(run_.last_pt(), run_.weights_dir + "/epoch" + std::to_string(epoch) + ".pt",
                    fs::copy_options::overwrite_existing);
  }
  timeline_.mark(StepStage::logging);
  const StageTotals et = timeline_.end_epoch();
  const StageTotals gpu = gpu_clock_->take(/*wait=*/true);
  gpu_run_ += gpu;
  sampler_.sample_now();  // an epoch shorter than the sampling interval still gets a reading
  const VerdictInput vin{et, sampler_.summarize(epoch_sample_mark_), device_.is_cuda(), workers_,
                         largest_stage_name(loader_->stage_times()), loader_->cache() != nullptr, dp_->size()};
  std::printf("epoch %d: %.1f s train, %s | %s\n", epoch, epoch_train_seconds_, format_stage_line(et).c_str(),
              judge(vin).summary.c_str());
  if (gpu.steps) std::printf("  %s\n", format_device_line(gpu, et).c_str());
  std::fflush(stdout);  // a line per epoch also when stdout is a pipe (tee, a log collector)
  stop_ = dp_->any(stop_);
  if (stop_ && epoch + 1 < opt_.epochs && !step_budget_spent_)
    std::cout << "Stopping training early as no improvement observed in last " << opt_.patience
              << " epochs. Best results observed at epoch " << stopper_.best_epoch() << ".\n";
}

ResumePoint Trainer::resume_point(int epoch, int batch) const {
  ResumePoint p;
  p.epoch = epoch;
  p.batch = batch;
  p.last_opt_step = schedule_->last_optimizer_step();
  p.mloss = values3(mloss_);
  p.stopper = stopper_.state();
  p.val_metrics = {last_val_.metrics.mp, last_val_.metrics.mr, last_val_.metrics.map50, last_val_.metrics.map};
  p.val_loss = last_val_.loss;
  p.loss_scale = scaler_.state().scale;
  p.scale_growth_tracker = scaler_.state().growth_tracker;
  return p;
}

std::string Trainer::checkpoint_bytes(int epoch, int batch) {
  meta_.epoch = epoch - 1;  // the last completed epoch
  meta_.best_fitness = best_fitness_;
  meta_.ema_updates = ema_->updates();
  meta_.resume_point = resume_point(epoch, batch);
  return serialize_checkpoint(meta_, *model_, &ema_->module(), optimizer_.get(), grads_pending_);
}

void Trainer::save_mid_epoch(int epoch, int batch, bool in_background) {
  if (grads_pending_) dp_->average_gradients();
  last_save_ = std::chrono::steady_clock::now();
  if (!dp_->main()) return;
  write_last_pt(checkpoint_bytes(epoch, batch));
  last_save_ = std::chrono::steady_clock::now();
  if (in_background) {
    std::printf("--save-minutes: writing %s at epoch %d, batch %d/%d\n", run_.last_pt().c_str(), epoch, batch, nb_);
    std::fflush(stdout);
  } else {
    wait_for_checkpoint();
  }
}

// train_batch0-2.jpg: the augmented batch as the model sees it, drawn off the training thread.
void Trainer::plot_train_batch(int i, const Batch& batch) {
  plot_jobs_.push_back(std::async(std::launch::async, [picture = picture_of(batch), names = names_,
                                                       path = run_.save_dir + "/train_batch" + std::to_string(i) + ".jpg"] {
    write_batch_plot(picture, names, path);
  }));
}

void Trainer::finish_plots() {
  for (auto& job : plot_jobs_) {
    try {
      job.get();
    } catch (const std::exception& e) {
      std::cerr << "WARNING: " << e.what() << "\n";
    }
  }
  plot_jobs_.clear();
  if (!opt_.noplots && fs::exists(run_.results_csv())) write_results_plot(run_.results_csv(), run_.save_dir + "/results.png");
}

// A failed write (a full disk, a folder gone read-only) stops the run with what to do: the write went
// to a temporary, so the last.pt before it is whole and resumes.
void Trainer::wait_for_checkpoint() {
  try {
    writer_.wait();
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("checkpoint not saved: ") + e.what() + ". " +
                             (fs::exists(run_.last_pt()) ? "The previous " + run_.last_pt() + " is intact: free disk space (or make the folder writable), then `kestrel train --resume " + run_.last_pt() + "`"
                                                         : std::string("No checkpoint was saved before: free disk space and start the run again")));
  }
}

void Trainer::write_last_pt(std::string bytes) {
  wait_for_checkpoint();  // the previous background write's error, if any, first
  writer_.write(run_.last_pt(), std::move(bytes));
}

TrainResult Trainer::finish() {
  wait_for_checkpoint();
  TrainResult result;
  result.save_dir = run_.save_dir;
  result.epochs_run = epochs_run_;
  result.best_fitness = best_fitness_;
  result.final_metrics = last_val_.metrics;
  result.timeline = timeline_.run();
  result.seconds_per_epoch = epochs_run_ ? train_seconds_ / epochs_run_ : 0;
  result.last_epoch_seconds = epoch_train_seconds_;
  result.seconds_per_val = val_passes_ ? val_seconds_ / val_passes_ : 0;
  result.first_step_seconds = first_steps_.steps ? first_steps_.step_seconds() / first_steps_.steps : 0;
  result.steady_step_seconds = steady_steps_.steps ? steady_steps_.step_seconds() / steady_steps_.steps : 0;
  result.auto_checks = auto_check_lines_;
  result.interrupted = interrupted_;
  result.stop_signal = interrupted_ ? (g_interrupted != 0 ? static_cast<int>(g_interrupted) : SIGINT) : 0;
  result.ran = opt_;
  result.ran.workers = workers_;
  result.ran.cache = cache_name(cache_);
  result.steps_per_epoch = nb_;
  result.batches_of_work = static_cast<double>(train_index_.records.size()) / opt_.batch_size;
  sampler_.sample_now();  // the tail since the last reading (all of a run shorter than the interval)
  result.system = sampler_.summarize(0);
  result.processes = dp_->size();
  if (!dp_->main()) return result;  // rank 0 writes the run's files
  if (interrupted_) {
    const World& w = dp_->world();  // a job resumes on as many processes as it had
    const std::string job = w.distributed() ? " --nproc-per-node " + std::to_string(w.local_size) +
                                                  (w.size > w.local_size ? " --nnodes " + std::to_string(w.size / w.local_size) : "")
                                            : "";
    std::cout << std::flush;  // the run's last lines before the message that ends it
    std::cerr << "\n" << (result.stop_signal == SIGTERM ? "Stopped by SIGTERM" : "Interrupted") << ": saved " << run_.last_pt() << "; continue with `kestrel train --resume " << run_.last_pt() << job
              << "`\n";
    return result;
  }
  std::printf("\n%d epochs completed in %.3f hours (%.2f s per epoch, %.2f s per validation).\n", epochs_run_,
              (train_seconds_ + val_seconds_) / 3600, result.seconds_per_epoch, result.seconds_per_val);
  if (last_val_.metrics.images)
    std::cout << format_val_table(last_val_.metrics, names_, true) << format_val_speed(last_val_, opt_.img_size, val_options_.batch_size) << "\n";
  // train.py's strip_optimizer: the final files keep the EMA weights alone.
  for (const std::string& path : {run_.last_pt(), run_.best_pt()})
    if (fs::exists(path)) strip_checkpoint(path, *model_->copy());

  const VerdictInput vin{result.timeline, result.system, device_.is_cuda(), workers_,
                         largest_stage_name(loader_->stage_times()), loader_->cache() != nullptr, dp_->size()};
  const Verdict& verdict = result.verdict = judge(vin);
  std::cout << "Time per step: " << format_stage_line(result.timeline) << "\n";
  if (gpu_run_.steps) std::cout << format_device_line(gpu_run_, result.timeline) << "\n";
  std::cout
            << "Verdict: " << verdict.summary << "\nNext: " << verdict.action << "\n";
  finish_plots();
  if (sparsity_.enabled() && !opt_.noplots) sparsity_.write_plot(run_.save_dir + "/gamma_hist.png");
  if (const std::string report = sparsity_.target_report(opt_.epochs, nb_); !report.empty()) std::cout << report << "\n";
  write_run_report(run_.save_dir + "/report.json", result.timeline, sampler_.samples(), verdict,
                   !opt_.noplots ? run_.save_dir + "/timeline.png" : "");
  std::cout << "Results saved to " << run_.save_dir << "\n";
  return result;
}

}  // namespace kestrel
