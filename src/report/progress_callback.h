// Progress reported by a library call as (done, total) callbacks, drawn as a ProgressBar. The bar is
// created on the first callback, so a step that finishes without reporting (a cache hit) draws nothing.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "report/progress_bar.h"

namespace kestrel {

class ProgressCallback {
 public:
  explicit ProgressCallback(std::string description) : description_(std::move(description)) {}
  // A callback that advances this bar to `done`; valid while this object lives.
  std::function<void(size_t, size_t)> callback() {
    return [this](size_t done, size_t total) { report(done, total); };
  }
  // Final redraw and newline, if a bar was drawn.
  void close() {
    if (bar_) bar_->close();
  }

 private:
  void report(size_t done, size_t total) {
    if (!bar_) {
      bar_ = std::make_unique<ProgressBar>(static_cast<int64_t>(total));
      bar_->set_description(description_);
    }
    if (static_cast<int64_t>(done) > bar_->n()) bar_->update(static_cast<int64_t>(done) - bar_->n());
  }
  std::string description_;
  std::unique_ptr<ProgressBar> bar_;
};

}  // namespace kestrel
