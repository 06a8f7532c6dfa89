// A tqdm-like progress bar in YOLOv5's layout (bar_format '{l_bar}{bar:10}{r_bar}'):
//   "<desc>: 50%|█████     | 4/8 [00:02<00:02,  1.90it/s]"
// redrawn in place at most ~10 times a second on a terminal; when the output is not a terminal,
// a plain line is printed every few seconds and at the end. Formatting is a pure function of
// (desc, n, total, elapsed, rate), so it is testable without a clock.
#pragma once
#include <array>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>

namespace kestrel {

// tqdm's format_interval: "MM:SS", or "H:MM:SS" from one hour on (seconds truncated).
std::string format_interval(double seconds);

// One progress line without redraw control characters. rate is items per second (<= 0: unknown,
// shown as '?'); tqdm shows "s/it" instead when an item takes more than a second.
std::string format_progress(const std::string& desc, int64_t n, int64_t total, double elapsed_s, double rate);

// YOLOv5 train.py progress columns: ('%11s' * 7) header and the per-batch description
// ('%11s' * 2 + '%11.4g' * 5) % (f'{epoch}/{epochs - 1}', f'{mem:.3g}G', *mloss, instances, size),
// the loss columns named by the model's family (train/detection_loss.h).
std::string train_progress_header(const std::array<std::string, 3>& loss_names = {"box_loss", "obj_loss", "cls_loss"});
std::string train_progress_desc(int epoch, int epochs, double mem_gb, const std::array<double, 3>& mean_loss,
                                int64_t instances, int64_t img_size);

class ProgressBar {
 public:
  using Clock = std::function<double()>;  // monotonic seconds

  // out: where to draw; clock: time source (default steady_clock); interactive: redraw in place
  // (default: whether `out` is a terminal).
  explicit ProgressBar(int64_t total, std::FILE* out = stdout, Clock clock = {},
                       std::optional<bool> interactive = std::nullopt);
  ~ProgressBar() { close(); }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void set_description(std::string desc) { desc_ = std::move(desc); }

  // Advances by k items and redraws if due (keeps the current description).
  void update(int64_t k = 1) {
    if (advance(k)) draw();
  }
  // Same, but describe() (returning the description) is called only when a redraw is due, so the
  // per-batch formatting cost is paid ~10 times a second, not every batch.
  template <typename Describe>
  void update(int64_t k, Describe&& describe) {
    if (advance(k)) {
      desc_ = describe();
      draw();
    }
  }

  // Final redraw and newline; idempotent.
  void close();

  int64_t n() const { return n_; }

 private:
  bool advance(int64_t k);  // true when a redraw is due
  void draw();

  int64_t total_, n_ = 0;
  std::FILE* out_;
  Clock clock_;
  bool interactive_, closed_ = false;
  double min_interval_s_;
  double start_, last_draw_t_;
  int64_t last_draw_n_ = 0;
  double ema_dn_ = 0, ema_dt_ = 0;  // tqdm's smoothed rate: EMA (smoothing 0.3) of items and seconds
  std::string desc_, line_;
};

}  // namespace kestrel
