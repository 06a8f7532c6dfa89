// tqdm-style progress bar (see progress_bar.h).
#include "report/progress_bar.h"

#include <chrono>

#include "report/console.h"

namespace kestrel {
namespace {

constexpr int kBarWidth = 10;
constexpr double kSmoothing = 0.3;           // tqdm's default
constexpr double kTerminalInterval = 0.1;    // seconds between redraws on a terminal
constexpr double kPlainInterval = 10.0;      // seconds between lines in a log file
// tqdm's unicode bar: blank, 1/8 .. 7/8 blocks, full block.
constexpr const char* kBlocks[] = {" ", "\u258F", "\u258E", "\u258D", "\u258C", "\u258B", "\u258A", "\u2589", "\u2588"};

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string bar(double frac) {
  const int nsyms = 8;
  const int eighths = static_cast<int>(frac * kBarWidth * nsyms);
  const int full = eighths / nsyms, part = eighths % nsyms;
  std::string out;
  for (int k = 0; k < full && k < kBarWidth; ++k) out += kBlocks[8];
  if (full < kBarWidth) {
    out += kBlocks[part];
    for (int k = full + 1; k < kBarWidth; ++k) out += ' ';
  }
  return out;
}

}  // namespace

std::string format_interval(double seconds) {
  const long long t = static_cast<long long>(seconds);
  const long long h = t / 3600, m = (t / 60) % 60, s = t % 60;
  char buf[48];
  if (h)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", h, m, s);
  else
    std::snprintf(buf, sizeof buf, "%02lld:%02lld", m, s);
  return buf;
}

std::string format_progress(const std::string& desc, int64_t n, int64_t total, double elapsed_s, double rate) {
  const double frac = total > 0 ? static_cast<double>(n) / static_cast<double>(total) : 0.0;
  char rate_buf[32];
  if (rate <= 0)
    std::snprintf(rate_buf, sizeof rate_buf, "?it/s");
  else if (1.0 / rate > 1.0)
    std::snprintf(rate_buf, sizeof rate_buf, "%5.2fs/it", 1.0 / rate);
  else
    std::snprintf(rate_buf, sizeof rate_buf, "%5.2fit/s", rate);
  const std::string remaining = rate > 0 && total > 0 ? format_interval(static_cast<double>(total - n) / rate) : "?";
  char head[16], tail[64];
  std::snprintf(head, sizeof head, "%3.0f%%|", frac * 100);
  std::snprintf(tail, sizeof tail, "| %lld/%lld [", static_cast<long long>(n), static_cast<long long>(total));
  std::string line;
  line.reserve(desc.size() + 96);
  if (!desc.empty()) line += desc + ": ";
  line += head;
  line += bar(frac);
  line += tail;
  line += format_interval(elapsed_s) + "<" + remaining + ", " + rate_buf + "]";
  return line;
}

std::string train_progress_header(const std::array<std::string, 3>& loss_names) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%11s%11s%11s%11s%11s%11s%11s", "Epoch", "GPU_mem", loss_names[0].c_str(), loss_names[1].c_str(),
                loss_names[2].c_str(), "Instances", "Size");
  return buf;
}

std::string train_progress_desc(int epoch, int epochs, double mem_gb, const std::array<double, 3>& mean_loss,
                                int64_t instances, int64_t img_size) {
  char epoch_col[32], mem_col[32], buf[160];
  std::snprintf(epoch_col, sizeof epoch_col, "%d/%d", epoch, epochs - 1);
  std::snprintf(mem_col, sizeof mem_col, "%.3gG", mem_gb);
  std::snprintf(buf, sizeof buf, "%11s%11s%11.4g%11.4g%11.4g%11.4g%11.4g", epoch_col, mem_col, mean_loss[0],
                mean_loss[1], mean_loss[2], static_cast<double>(instances), static_cast<double>(img_size));
  return buf;
}

ProgressBar::ProgressBar(int64_t total, std::FILE* out, Clock clock, std::optional<bool> interactive)
    : total_(total),
      out_(out),
      clock_(clock ? std::move(clock) : Clock(steady_seconds)),
      interactive_(interactive.value_or(is_terminal(out))),
      min_interval_s_(interactive_ ? kTerminalInterval : kPlainInterval) {
  start_ = last_draw_t_ = clock_();
  if (interactive_) draw();
}

bool ProgressBar::advance(int64_t k) {
  n_ += k;
  if (closed_) return false;
  return n_ >= total_ || clock_() - last_draw_t_ >= min_interval_s_;
}

void ProgressBar::draw() {
  const double now = clock_();
  const double dt = now - last_draw_t_;
  const auto dn = static_cast<double>(n_ - last_draw_n_);
  if (dn > 0 && dt > 0) {
    ema_dn_ = kSmoothing * dn + (1 - kSmoothing) * ema_dn_;
    ema_dt_ = kSmoothing * dt + (1 - kSmoothing) * ema_dt_;
  }
  last_draw_t_ = now;
  last_draw_n_ = n_;
  const double rate = ema_dt_ > 0 ? ema_dn_ / ema_dt_ : 0.0;
  line_ = format_progress(desc_, n_, total_, now - start_, rate);
  if (!out_) return;
  if (interactive_)
    std::fprintf(out_, "\r%s\x1b[K", line_.c_str());  // erase what a longer previous line left
  else
    std::fprintf(out_, "%s\n", line_.c_str());
  std::fflush(out_);
}

void ProgressBar::close() {
  if (closed_) return;
  // The last state is already shown unless updates arrived since, or nothing was ever printed.
  if (n_ != last_draw_n_ || line_.empty()) draw();
  if (interactive_ && out_) {
    std::fputc('\n', out_);
    std::fflush(out_);
  }
  closed_ = true;
}

}  // namespace kestrel
