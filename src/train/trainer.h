// The training run: YOLOv5 train.py in C++ with every stage timed, as a Trainer whose stages carry
// names; Ultralytics' trainer for its models, where its recipe differs (hyperparameters, optimizer
// auto, loss, close_mosaic, validation rules, results.csv). Set-up (trainer_setup.cpp): the run folder and options, the data (index, scan), the model
// (build or transfer, freeze, stride), the loaders (cache, worker tuning), the optimization (schedule,
// optimizer, EMA, loss, early stopping) and, for --resume, the state of an interrupted run. The loop
// (trainer.cpp): epochs of steps, validation of the EMA model, results.csv, checkpoints, and the
// verdict and report at the end. Ctrl-C (or --save-minutes) checkpoints between two batches with
// everything an exact --resume needs, gradients of an unfinished accumulation window included.
#pragma once
#include <torch/torch.h>

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/hyp.h"
#include "data/index/dataset_config.h"
#include "data/index/label_index.h"
#include "data/loader/loader.h"
#include "data/loader/worker_tuning.h"
#include "device/batch_upload.h"
#include "device/stage_events.h"
#include "distributed/data_parallel.h"
#include "eval/metrics.h"
#include "model/checkpoint.h"
#include "model/precision.h"
#include "model/weights.h"
#include "profile/auto_check.h"
#include "profile/system_sampler.h"
#include "profile/timeline.h"
#include "profile/verdict.h"
#include "report/results_csv.h"
#include "report/run_dir.h"
#include "train/amp_choice.h"
#include "train/background_writer.h"
#include "train/batch_plan.h"
#include "train/divergence.h"
#include "train/early_stopping.h"
#include "train/ema.h"
#include "train/grad_scaler.h"
#include "train/detection_loss.h"
#include "train/lr_schedule.h"
#include "train/optimizer.h"
#include "train/resume_point.h"
#include "train/sparsity.h"
#include "train/train_options.h"
#include "val/validator.h"

namespace kestrel {

struct TrainResult {
  std::string save_dir;
  int epochs_run = 0;
  double best_fitness = 0;
  ValMetrics final_metrics;
  StageTotals timeline;          // whole-run step timeline
  double seconds_per_epoch = 0;  // mean training time of an epoch (no validation)
  double last_epoch_seconds = 0; // training time of the last epoch (no validation)
  double seconds_per_val = 0;    // mean time of a validation pass
  // The timed steps apart: an epoch's first step (which also waits for the loader to fill its queue
  // from empty) and the others; each a mean of the step's own time, from its batch's wait to its
  // progress line (0 when none was timed). An epoch's end (results.csv, checkpoints) is in neither.
  double first_step_seconds = 0, steady_step_seconds = 0;
  std::vector<std::string> auto_checks;  // the lines the run's checks of its auto choices printed
  Verdict verdict;               // what limited the run (also in report.json)
  bool interrupted = false;      // Ctrl-C or SIGTERM stopped it (last.pt saved for --resume)
  int stop_signal = 0;           // which: SIGINT or SIGTERM (another rank's in a job: SIGINT)
  TrainOptions ran;              // the options as run: --batch, --amp, --workers and --cache resolved
  int steps_per_epoch = 0;       // batches in a full epoch of the training data
  double batches_of_work = 0;    // the epoch's images over the batch: a last, partial batch counts as its share
  SystemSummary system;          // CPU/GPU use over the whole run
  int processes = 1;             // data-parallel ranks that trained it
};

class Trainer {
 public:
  // Runs the set-up stages; throws std::runtime_error (naming the file) on bad input.
  explicit Trainer(TrainOptions options);
  TrainResult run();

 private:
  // ---- set-up, in this order (trainer_setup.cpp)
  void join_job();              // a data-parallel job: the other ranks, same options, torchrun restarts
  void setup_run();             // --resume options, demo data, threads, seed, run folder, opt.json, hyp
  void prepare_data();          // data.yaml, class names, indexes, scan
  void prepare_model();         // build or transfer, class names, freeze, summary, image size vs stride
  void choose_recipe();         // the model family's hyperparameters and close_mosaic
  void check_anchors();         // AutoAnchor: new anchors when the current ones fit the labels poorly
  void prepare_batch();         // --amp (measured when auto), --batch-size -1 (AutoBatch), optimizer, nominal batch, LR
  void prepare_loaders();       // cache choice, the train loader, --workers auto, the validator
  void prepare_optimization();  // validator, schedule, optimizer, EMA, loss, early stopping, checkpoint meta
  void restore();               // --resume: tensors, gradients and the resume point from the checkpoint
  void arm_auto_checks();       // what --amp auto and --workers auto predicted, for the run to check (trainer_checks.cpp)

  // ---- the loop (trainer.cpp)
  void train_epoch(int epoch);  // from point_.batch to the epoch's end, or to a Ctrl-C
  DeviceBatch fetch_batch(int epoch, int i);  // batch i from the loader, its copy to the device queued
  void train_step(int epoch, int i, DeviceBatch& batch);
  bool interrupt_requested();   // Ctrl-C, agreed by every rank of a job
  // The step just taken (the timeline's epoch totals before and after it): counted as an epoch's first
  // step or a steady one, and fed to the auto checks, whose actions are applied here (a precision at
  // once, a worker count from the next epoch).
  void count_step(const StageTotals& before, const StageTotals& after, bool epoch_first);
  void say_check(const std::string& line);  // printed, and kept for the run's result
  void apply_amp_action(AutoCheck::Action action);
  void apply_workers_action(AutoCheck::Action action);
  CsvLayout csv_layout() const { return model_->config().ultralytics ? CsvLayout::ultralytics : CsvLayout::yolov5; }
  void record_resolved_options();  // opt.json and the checkpoints' options, after a choice changed
  // Unscale, clip, step (skipped on inf/NaN), zero grads, EMA: after each accumulation window.
  void optimizer_step(int epoch, int i, const Batch* batch);
  void validate(int epoch, bool final_epoch);
  void end_epoch(int epoch);    // validation, results.csv, checkpoints, the epoch line
  ResumePoint resume_point(int epoch, int batch) const;
  std::string checkpoint_bytes(int epoch, int batch);
  void save_mid_epoch(int epoch, int batch, bool in_background);
  void write_last_pt(std::string bytes);  // atomically, in the background
  void wait_for_checkpoint();             // rethrows a failed write with what the user can do
  void plot_train_batch(int i, const Batch& batch);
  void finish_plots();  // waits for the batch pictures, draws results.png
  TrainResult finish();

  TrainOptions opt_;
  std::unique_ptr<DataParallel> dp_;  // inactive for one process
  std::string resume_ckpt_;  // "" for a new run
  Hyp hyp_;
  torch::Device device_{torch::kCPU};
  std::unique_ptr<BatchUploader> uploader_;   // batches to the device, copied while the previous step runs
  std::unique_ptr<DeviceStageClock> gpu_clock_;  // the GPU's time per stage (CUDA events; off on a CPU)
  int cores_ = 1, workers_ = 1;
  RunDir run_;

  DatasetConfig data_;
  int nc_ = 0;
  std::vector<std::string> names_;
  DatasetIndex train_index_, val_index_;
  CacheMode cache_ = CacheMode::none;
  std::unique_ptr<Loader> loader_;
  int nb_ = 0;  // batches per epoch

  Precision precision_ = Precision::fp32;  // forward passes under autocast unless fp32
  AmpChoice amp_choice_;                   // what --amp auto measured (nothing timed otherwise)
  WorkerChoice worker_choice_;             // what --workers auto measured (an empty curve otherwise)
  std::optional<AutoCheck> amp_check_, workers_check_;  // the run's checks of those two
  int pending_workers_ = 0;                // a worker count the loader starts with at the next epoch
  std::vector<std::string> auto_check_lines_;  // what the checks said
  GradScaler scaler_;                      // enabled for fp16
  DivergenceWatch divergence_;             // stops the run on a streak of non-finite steps
  SparsityTraining sparsity_;              // --sparsity: the BN penalty and |gamma| records

  BuiltModel built_;
  DetectionModel model_{nullptr};
  int gs_ = 32;  // grid size: the largest stride, at least 32
  ValOptions val_options_;
  std::unique_ptr<Validator> validator_;
  std::unique_ptr<TrainSchedule> schedule_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<ModelEMA> ema_;
  OptimizerChoice optimizer_choice_;  // what --optimizer resolved to
  DetectionLoss loss_;
  EarlyStopping stopper_;
  CheckpointMeta meta_;

  // where the run stands
  ResumePoint point_;             // where the next epoch starts (epoch, batch, restored state)
  double best_fitness_ = 0;
  torch::Tensor mloss_;           // running means of the epoch's train losses
  bool grads_pending_ = false;    // a backward since the last optimizer step
  ValResult last_val_;
  bool stop_ = false;             // early stopping or the step budget
  bool step_budget_spent_ = false;  // --max-steps (kestrel profile) reached: no validation, no checkpoint
  bool interrupted_ = false;
  int64_t steps_total_ = 0;
  int64_t last_instances_ = 0, last_size_ = 0;  // of the latest batch, for the progress line
  torch::Tensor resident_images_, resident_targets_;  // --resident: the batch every step reuses

  // what it cost
  SystemSampler sampler_;
  StepTimeline timeline_;
  StageTotals gpu_run_;  // the GPU clock's totals over the run
  size_t epoch_sample_mark_ = 0;  // the sampler's first sample of this epoch
  double epoch_train_seconds_ = 0, train_seconds_ = 0, val_seconds_ = 0;
  StageTotals first_steps_, steady_steps_;  // the timed steps' own times: epochs' first steps, the others
  int val_passes_ = 0, epochs_run_ = 0;
  BackgroundWriter writer_;  // --save-minutes checkpoints
  std::vector<std::future<void>> plot_jobs_;  // train_batch pictures being drawn
  std::chrono::steady_clock::time_point last_save_;
  std::chrono::steady_clock::time_point train_start_;  // results.csv's `time` (Ultralytics' layout)
};

// Trainer(options).run().
TrainResult train(TrainOptions options);

}  // namespace kestrel
