// Cheap per-thread stage timers for the data pipeline. A loader thread points `stage_sink()` at its own
// StageTimes; any code it runs (decode, augmentation, collation) can then add the time of a stage with a
// ScopedStage. Each record is two steady_clock reads (~50 ns) against milliseconds of work per image,
// so the timers are always on. Code running outside a loader thread records nothing.
#pragma once
#include <array>
#include <chrono>
#include <cstdint>

namespace kestrel {

enum class Stage { read, decode, resize, load, mosaic_warp, colour, augment, collate, count };
constexpr int kStageCount = static_cast<int>(Stage::count);

// Nanoseconds spent, and times entered, per stage. `load` and `augment` are the outer stages the loader times itself
// (load = getting a resized image: read + decode + resize, or a cache lookup; augment = building a sample
// from loaded images, loads excluded); the others are finer stages inside them, present when the code
// doing that work times itself.
struct StageTimes {
  std::array<uint64_t, kStageCount> ns{}, calls{};
  StageTimes& operator+=(const StageTimes& o) {
    for (int i = 0; i < kStageCount; ++i) ns[i] += o.ns[i], calls[i] += o.calls[i];
    return *this;
  }
  StageTimes operator-(const StageTimes& o) const {
    StageTimes d;
    for (int i = 0; i < kStageCount; ++i) d.ns[i] = ns[i] - o.ns[i], d.calls[i] = calls[i] - o.calls[i];
    return d;
  }
  uint64_t operator[](Stage s) const { return ns[static_cast<int>(s)]; }
};

// The calling thread's sink (nullptr when none).
inline StageTimes*& stage_sink() {
  thread_local StageTimes* sink = nullptr;
  return sink;
}

inline uint64_t steady_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

// Adds the lifetime of this object to `stage` of the calling thread's sink.
class ScopedStage {
 public:
  explicit ScopedStage(Stage stage) : sink_(stage_sink()), stage_(static_cast<int>(stage)), t0_(sink_ ? steady_ns() : 0) {}
  ~ScopedStage() {
    if (sink_) sink_->ns[stage_] += steady_ns() - t0_, ++sink_->calls[stage_];
  }
  ScopedStage(const ScopedStage&) = delete;
  ScopedStage& operator=(const ScopedStage&) = delete;

 private:
  StageTimes* sink_;
  int stage_;
  uint64_t t0_;
};

inline const char* stage_name(Stage s) {
  static const char* names[kStageCount] = {"read", "decode", "resize", "load", "mosaic/warp", "colour", "augment", "collate"};
  return names[static_cast<int>(s)];
}

// The stage with the most time in `t` ("" when nothing was recorded), for the verdict line. The
// finest stages win: read, decode, resize, colour and collate are timed where they run; mosaic/warp
// is what remains of augment after colour; load stands for itself only when its parts were not timed
// (cache lookups).
inline const char* largest_stage_name(const StageTimes& t) {
  auto ns = t.ns;
  auto at = [&](Stage s) -> uint64_t& { return ns[static_cast<int>(s)]; };
  if (at(Stage::read) + at(Stage::decode) + at(Stage::resize) > 0) at(Stage::load) = 0;
  if (at(Stage::augment) > 0) {
    at(Stage::mosaic_warp) = at(Stage::augment) > at(Stage::colour) ? at(Stage::augment) - at(Stage::colour) : 0;
    at(Stage::augment) = 0;
  }
  int best = -1;
  for (int i = 0; i < kStageCount; ++i)
    if (ns[i] > 0 && (best < 0 || ns[i] > ns[best])) best = i;
  return best < 0 ? "" : stage_name(static_cast<Stage>(best));
}

}  // namespace kestrel
