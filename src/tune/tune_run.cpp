// The ladder run: trials of the trainer with a step budget, the keep rule, the accuracy levers apart,
// the final check, and the table, chart and report.json of runs/tune/expN.
#include "tune/tune_run.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "core/atomic_file.h"
#include "device/device.h"
#include "model/precision.h"
#include "report/bar_chart.h"
#include "report/run_dir.h"
#include "train/trainer.h"

namespace kestrel {

namespace {

using Clock = std::chrono::steady_clock;
// Steps each trial runs before its timed ones: the first steps of a run pay one-time costs (oneDNN
// kernels chosen, heap grown, caches filled) that took the first trial 30 % over the second here.
constexpr int kUntimedSteps = 2;

struct Trial {
  TrainResult result;
  double step_s = 0;  // a steady step: the timed steps' mean, epochs' first steps left out
  double fill_s = 0;  // what an epoch's first step takes beyond a steady one (0 when none was timed)
  double wall_s = 0;
};

class LadderRun {
 public:
  explicit LadderRun(const TuneOptions& o) : o_(o), start_(Clock::now()) {
    save_dir_ = increment_path(o.base.project + "/" + o.base.name, o.base.exist_ok, "", /*mkdir=*/true);
  }

  TuneReport run() {
    std::cout << "kestrel tune: " << train_command(o_.base) << "\nbudget " << o_.budget_s << " s, " << o_.steps
              << " timed steps per trial, runs in " << save_dir_ << "/trials\n";
    baseline();
    climb();
    validation_interval();
    accuracy_trades();
    final_check();
    write_outputs();
    return report_;
  }

 private:
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  // A short run of `o`: `steps` timed training steps after kUntimedSteps (0: the run as `o` says),
  // validated once at the end when `validate`.
  Trial trial(TrainOptions o, const std::string& name, bool validate, int steps) {
    o.project = save_dir_ + "/trials";
    o.name = name;
    o.exist_ok = true;
    o.progress = false;
    o.noplots = true;
    o.noval = !validate;
    o.check_auto = false;  // the tune measures the levers itself: a trial switching mid-way would blur its figure
    o.untimed_steps = steps ? kUntimedSteps : 0;
    o.max_steps = steps ? steps + kUntimedSteps : 0;
    std::cout << "\n---- tune trial " << name << ": " << train_command(o) << "\n" << std::flush;
    const auto t0 = Clock::now();
    Trial t;
    t.result = train(o);
    t.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
    // An epoch's first step waits for the loader to fill: its excess over a steady step, once an epoch
    // (epochs of one step have no steady step: theirs is the step).
    const TrainResult& r = t.result;
    t.step_s = r.steady_step_seconds > 0 ? r.steady_step_seconds : r.first_step_seconds;
    t.fill_s = r.steady_step_seconds > 0 && r.first_step_seconds > 0 ? std::max(0.0, r.first_step_seconds - t.step_s) : 0;
    trial_wall_s_ = t.wall_s;
    return t;
  }

  // Time for one more trial and the final check (its set-up, two epochs and a validation pass), by
  // the last trial's duration.
  bool time_left_for_trial() const { return elapsed() + trial_wall_s_ + final_check_s() < o_.budget_s; }
  double final_check_s() const { return 2 * trial_wall_s_ + 2 * current_epoch_s_ + 2 * val_s_; }

  double epoch_s(const Trial& t, int val_period) const {
    return predicted_epoch_seconds(t.fill_s, t.step_s, t.result.batches_of_work, val_s_, val_period);
  }

  TuneRow row_of(const Trial& t, const std::string& lever, const std::string& setting, double epoch) const {
    TuneRow r;
    r.step = static_cast<int>(report_.rows.size());
    r.lever = lever;
    r.setting = setting;
    r.epoch_s = epoch;
    r.speedup = report_.rows.empty() ? 1.0 : report_.rows.front().epoch_s / epoch;
    r.data_wait_share = t.result.timeline.share(StepStage::data_wait);
    r.cpu_percent = 100 * t.result.system.process_cpu;
    r.note = t.result.verdict.summary;
    return r;
  }

  // The settings a kept lever resolved (--workers auto, --cache auto, AutoBatch, --amp) carried on.
  void adopt(const TrainResult& result) {
    current_.workers = result.ran.workers;
    current_.cache = result.ran.cache;
    current_.batch_size = result.ran.batch_size;
    current_.amp = result.ran.amp;
    current_.prefetch = result.ran.prefetch;
    steps_per_epoch_ = result.steps_per_epoch;
  }

  // The user's settings, twice: once validated (the pass's cost), once not; the two step times
  // give the noise the keep rule must beat.
  void baseline() {
    current_ = o_.base;
    const Trial first = trial(current_, "0_baseline", /*validate=*/!o_.base.noval, o_.steps);
    val_s_ = first.result.seconds_per_val;
    const Trial second = trial(current_, "0_baseline_again", /*validate=*/false, o_.steps);
    report_.noise = noise_margin(first.step_s, second.step_s);
    // The baseline's step is the mean of the two: the faster alone would flatter it by the noise.
    Trial mean = second;
    mean.step_s = (first.step_s + second.step_s) / 2;
    adopt(mean.result);
    current_step_s_ = mean.step_s;
    current_epoch_s_ = epoch_s(mean, current_.val_period);
    TuneRow r = row_of(mean, "baseline", "as given", current_epoch_s_);
    r.kept = true;
    report_.rows.push_back(r);
    std::printf("\nbaseline: %.3f s/step and %.3f s/step in two runs -> noise margin %.1f%%; validation %.1f s a pass\n",
                first.step_s, second.step_s, 100 * report_.noise, val_s_);
  }

  void climb() {
    const MachineFacts facts{parse_device(o_.base.device).is_cuda(), cpu_has_bf16()};
    for (const Lever& lever : speed_levers(o_.base, facts, report_.skipped)) {
      const std::optional<Trial> t = try_lever(lever);
      if (!t) continue;
      TuneRow r = row_of(*t, lever.name, lever.setting, epoch_s(*t, current_.val_period));
      r.kept = keeps_lever(r.epoch_s, current_epoch_s_, report_.noise);
      if (r.kept) {
        adopt(t->result);
        current_step_s_ = t->step_s;
        current_epoch_s_ = r.epoch_s;
        current_row_ = report_.rows.size();
      }
      report_.rows.push_back(r);
      print_row(r);
    }
  }

  // A trial of the current settings with `lever` pulled; none when the budget has no time left.
  std::optional<Trial> try_lever(const Lever& lever) {
    if (!time_left_for_trial()) {
      report_.skipped.push_back(lever.name + ": skipped for time (--budget)");
      return std::nullopt;
    }
    TrainOptions candidate = current_;
    lever.apply(candidate);
    return trial(candidate, std::to_string(report_.rows.size()) + "_" + lever.name, /*validate=*/false, o_.steps);
  }

  // Validation every 5 epochs instead of every one: its measured cost per epoch, no trial needed.
  void validation_interval() {
    if (o_.base.noval || o_.base.val_period != 1 || val_s_ <= 0) {
      report_.skipped.push_back("validation interval: already --val-period " + std::to_string(o_.base.val_period) +
                                (o_.base.noval ? " (--noval)" : ""));
      return;
    }
    const double epoch = current_epoch_s_ - val_s_ + val_s_ / 5;
    TuneRow r = report_.rows[current_row_];  // the current settings' trial figures
    r.step = static_cast<int>(report_.rows.size());
    r.lever = "validation";
    r.setting = "--val-period 5";
    r.epoch_s = epoch;
    r.speedup = report_.rows.front().epoch_s / epoch;
    r.kept = keeps_lever(epoch, current_epoch_s_, report_.noise);
    char note[160];
    std::snprintf(note, sizeof note, "a validation pass takes %.1f s; every 5 epochs it costs %.1f s an epoch", val_s_, val_s_ / 5);
    r.note = note;
    if (r.kept) {
      current_.val_period = 5;
      current_epoch_s_ = epoch;
    }
    report_.rows.push_back(r);
    print_row(r);
    report_.skipped.push_back("plots: drawn once at the end of a run, never per epoch (--noplots saves only that)");
  }

  void accuracy_trades() {
    for (const Lever& lever : accuracy_levers(current_)) {
      const std::optional<Trial> t = try_lever(lever);
      if (!t) continue;
      TuneRow r = row_of(*t, lever.name, lever.setting, epoch_s(*t, current_.val_period));
      r.trades_accuracy = true;
      r.cost = lever.cost;
      report_.rows.push_back(r);
      print_row(r);
    }
  }

  // The final command, run: two real epochs, the second one (with its validation pass per
  // --val-period) measured, since the first pays the run's warm-up; when two epochs do not fit the
  // budget, four trials' worth of steps.
  void final_check() {
    report_.final_command = train_command(current_);
    predict_final();
    report_.predicted_epoch_s = current_epoch_s_;
    TrainOptions o = current_;
    if (steps_per_epoch_ <= 4 * o_.steps || elapsed() + trial_wall_s_ + 2 * current_epoch_s_ < o_.budget_s) {
      o.epochs = 2;
      o.close_mosaic = 0;  // mosaic on, as in the trials
      const Trial t = trial(o, "final", /*validate=*/!o.noval, /*steps=*/0);
      report_.measured_epoch_s = t.result.last_epoch_seconds + t.result.seconds_per_val / std::max(1, o.val_period);
      report_.measured_how = "the second of two real epochs of the final command, its validation pass counted once per --val-period";
    } else {
      const Trial t = trial(o, "final", /*validate=*/false, 4 * o_.steps);
      report_.measured_epoch_s = epoch_s(t, o.val_period);
      report_.measured_how = std::to_string(4 * o_.steps) + " timed steps of the final command";
    }
  }

  // The prediction's own trial of the final settings, validated: the pass as they run it (the cache,
  // workers and precision levers change validation too, not only the step), and their steady step,
  // after the warm-up steps of a trial, rather than the ladder's figure from whichever trial kept
  // the last lever (an earlier point of a drifting machine).
  void predict_final() {
    if (elapsed() + final_check_s() > o_.budget_s) {
      report_.skipped.push_back("prediction trial of the final settings: skipped for time (--budget); the ladder's figures stand");
      return;
    }
    const Trial t = trial(current_, "final_settings", /*validate=*/!current_.noval, o_.steps);
    if (t.result.seconds_per_val > 0) val_s_ = t.result.seconds_per_val;
    const double before = current_epoch_s_;
    current_epoch_s_ = epoch_s(t, current_.val_period);
    std::printf("\nfinal settings: %.3f s a steady step (%.3f in the ladder), %.2f s more for an epoch's first, validation "
                "%.1f s a pass -> %.1f s an epoch (ladder: %.1f)\n",
                t.step_s, current_step_s_, t.fill_s, val_s_, current_epoch_s_, before);
  }

  void print_row(const TuneRow& r) const { std::cout << "\n" << format_row(r) << "\n"; }

  static std::string format_row(const TuneRow& r) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%-4d %-14s %-20s %9.1f %8.2fx %9.1f%% %7.0f%%  %s", r.step, r.lever.c_str(), r.setting.c_str(),
                  r.epoch_s, r.speedup, 100 * r.data_wait_share, r.cpu_percent,
                  r.trades_accuracy ? "trades accuracy" : r.kept ? "kept" : "dropped");
    return buf;
  }

  void write_outputs() const {
    std::cout << "\n==== kestrel tune: the ladder (epoch time predicted from timed steps)\n"
              << "step lever          setting              epoch (s)  speed-up data wait     CPU\n";
    for (const TuneRow& r : report_.rows)
      if (!r.trades_accuracy) std::cout << format_row(r) << "\n    " << r.note << "\n";
    std::cout << "\nAccuracy-trading levers (measured, never chosen for you):\n";
    for (const TuneRow& r : report_.rows)
      if (r.trades_accuracy) std::cout << format_row(r) << "\n    costs: " << r.cost << "\n";
    std::cout << "\nNot tried:\n";
    for (const std::string& s : report_.skipped) std::cout << "  " << s << "\n";
    const double error = report_.predicted_epoch_s > 0 ? report_.measured_epoch_s / report_.predicted_epoch_s - 1 : 0;
    std::printf("\nFinal command (%.2fx the baseline's predicted epoch):\n  %s\npredicted %.1f s an epoch (noise ±%.1f%%), "
                "measured %.1f s (%+.1f%%, %s the noise; %s)\n",
                report_.rows.front().epoch_s / report_.predicted_epoch_s, report_.final_command.c_str(), report_.predicted_epoch_s,
                100 * report_.noise, report_.measured_epoch_s, 100 * error, std::fabs(error) <= report_.noise ? "within" : "beyond",
                report_.measured_how.c_str());
    write_file_atomic(save_dir_ + "/report.json", nlohmann::json(report_).dump(2) + "\n");
    write_bar_chart(chart(), save_dir_ + "/ladder.png");
    std::cout << "Results saved to " << save_dir_ << " (report.json, ladder.png)\n";
  }

  BarChart chart() const {
    BarChart c;
    const std::string model = std::filesystem::path(o_.base.cfg.empty() ? o_.base.weights : o_.base.cfg).filename().string();
    c.title = "kestrel tune: epoch time at each step of the ladder (" + model + ", img " + std::to_string(o_.base.img_size) + ")";
    c.value_label = "epoch time (s)";
    c.value_unit = "s";
    c.groups = {"lever kept", "lever dropped (no gain beyond noise)", "trades accuracy (not chosen)", "final command, measured"};
    for (const TuneRow& r : report_.rows)
      c.bars.push_back({std::to_string(r.step) + " " + r.lever + ": " + r.setting, r.epoch_s, r.trades_accuracy ? 2 : r.kept ? 0 : 1});
    c.bars.push_back({"final command (measured)", report_.measured_epoch_s, 3});
    return c;
  }

  const TuneOptions& o_;
  Clock::time_point start_;
  std::string save_dir_;
  TuneReport report_;
  TrainOptions current_;
  double current_epoch_s_ = 0, current_step_s_ = 0, val_s_ = 0, trial_wall_s_ = 0;
  int steps_per_epoch_ = 0;
  size_t current_row_ = 0;  // the row of the last kept step
};

}  // namespace

TuneReport run_tune(const TuneOptions& options) { return LadderRun(options).run(); }

}  // namespace kestrel
