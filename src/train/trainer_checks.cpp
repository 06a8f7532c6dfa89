// Each step's own times, counted apart for an epoch's first step and the steady ones (what `kestrel
// tune` predicts an epoch from), and the run's checks of its `auto` choices (profile/auto_check.h):
// what --amp auto's probe predicted for the forward+loss+backward of its precision, and what
// --workers auto's loader curve predicted for the data wait, compared with the run's own steps. A
// failed prediction makes the run try the other setting (the other precision at once; one more
// loader thread from the next epoch, since the loader's threads start with an epoch), keep the
// cheaper per step, and record it in opt.json.
// Off in a data-parallel job (the ranks would have to agree on every switch) and for the trials of
// `kestrel tune`, which measure the levers themselves.
#include <iostream>

#include "core/atomic_file.h"
#include "train/trainer.h"

namespace kestrel {

namespace {

// Steps a new precision or loader thread count runs before its window is measured.
constexpr int kCheckWarmupSteps = 3;
// The least excess of data wait (a share of the step) that counts against --workers auto.
constexpr double kWaitNoise = 0.03;

double ms_of(const StageTotals& t, std::initializer_list<StepStage> stages) {
  double s = 0;
  for (const StepStage st : stages) s += t.seconds[static_cast<size_t>(st)];
  return 1000 * s;
}

Precision other_precision(Precision p) { return p == Precision::bf16 ? Precision::fp32 : Precision::bf16; }

}  // namespace

void Trainer::arm_auto_checks() {
  if (!opt_.check_auto || dp_->active()) return;
  const SampleSummary& probe = amp_choice_.timed(precision_);
  if (probe.n > 0) {
    AutoCheckSpec s;
    s.flag = "--amp auto";
    s.chosen = precision_name(precision_);
    s.alternative = precision_name(other_precision(precision_));
    s.figure = "forward+loss+backward";
    s.predicted = probe.median;
    s.noise = std::max(0.05, probe.spread / 2);
    s.warmup = kCheckWarmupSteps;
    amp_check_.emplace(s);
  }
  if (!worker_choice_.curve.empty() && !opt_.resident_batch) {
    // The images a second the model takes (from the probe of its step, when there was one) against
    // those the loader made alone at the chosen count: the share of a step it should wait.
    double loader_ips = 0;
    for (const WorkerProbe& p : worker_choice_.curve)
      if (p.workers == workers_) loader_ips = p.images_per_second;
    const double model_ips = probe.n > 0 ? loader_->batch_size() * 1000.0 / probe.median : 0;
    AutoCheckSpec s;
    s.flag = "--workers auto";
    s.chosen = std::to_string(workers_) + " workers";
    if (workers_ < std::min(cores_, 16)) s.alternative = std::to_string(workers_ + 1) + " workers";
    s.figure = "data wait";
    s.predicted = model_ips > 0 && loader_ips > 0 ? std::max(0.0, 1 - loader_ips / model_ips) : 0;
    s.share = true;
    s.noise = kWaitNoise;
    s.warmup = kCheckWarmupSteps;
    workers_check_.emplace(s);
  }
}

void Trainer::count_step(const StageTotals& before, const StageTotals& after, bool epoch_first) {
  StageTotals own;  // this step's times alone
  for (size_t s = 0; s < kNumStages; ++s) own.seconds[s] = after.seconds[s] - before.seconds[s];
  own.steps = 1;
  (epoch_first ? first_steps_ : steady_steps_) += own;
  const double compute_ms = ms_of(own, {StepStage::forward, StepStage::loss, StepStage::backward});
  const double step_ms = 1000 * own.step_seconds();
  if (amp_check_ && !amp_check_->finished()) apply_amp_action(amp_check_->add_step(compute_ms, compute_ms));
  if (workers_check_ && !workers_check_->finished() && pending_workers_ == 0 && step_ms > 0)
    apply_workers_action(workers_check_->add_step(ms_of(own, {StepStage::data_wait}) / step_ms, step_ms));
}

void Trainer::say_check(const std::string& line) {
  std::cout << line << std::endl;
  auto_check_lines_.push_back(line);
}

void Trainer::apply_amp_action(AutoCheck::Action action) {
  if (action == AutoCheck::Action::none) return;
  say_check(amp_check_->line());
  if (action == AutoCheck::Action::try_alternative || action == AutoCheck::Action::back_to_chosen)
    precision_ = other_precision(precision_);
  if (action == AutoCheck::Action::keep_alternative) {
    opt_.amp = precision_ == Precision::fp32 ? "off" : precision_name(precision_);
    if (validator_) validator_->set_precision(precision_);
    record_resolved_options();
  }
}

void Trainer::apply_workers_action(AutoCheck::Action action) {
  if (action == AutoCheck::Action::none) return;
  say_check(workers_check_->line());
  if (action == AutoCheck::Action::try_alternative) pending_workers_ = workers_ + 1;
  if (action == AutoCheck::Action::back_to_chosen) pending_workers_ = workers_ - 1;
  if (action == AutoCheck::Action::keep_alternative) {
    opt_.workers = workers_;
    record_resolved_options();
  }
}

void Trainer::record_resolved_options() {
  meta_.train_options = opt_;
  if (dp_->main()) write_file_atomic(run_.save_dir + "/opt.json", nlohmann::json(opt_).dump(2) + "\n");
}

}  // namespace kestrel
