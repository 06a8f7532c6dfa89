// Test helper: points the user cache folder (XDG_CACHE_HOME) at a fresh temporary folder for the
// lifetime of a test, so caches written by the code under test are isolated and inspectable.
#pragma once
#include <cstdlib>
#include <string>

#include "test_support.h"

namespace kestrel::test {

class ScopedCacheHome {
 public:
  ScopedCacheHome() : dir_(temp_dir("xdg")) {
    if (const char* old = std::getenv("XDG_CACHE_HOME")) old_ = old, had_old_ = true;
    setenv("XDG_CACHE_HOME", dir_.c_str(), 1);
  }
  ~ScopedCacheHome() {
    if (had_old_)
      setenv("XDG_CACHE_HOME", old_.c_str(), 1);
    else
      unsetenv("XDG_CACHE_HOME");
  }
  ScopedCacheHome(const ScopedCacheHome&) = delete;
  ScopedCacheHome& operator=(const ScopedCacheHome&) = delete;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_, old_;
  bool had_old_ = false;
};

}  // namespace kestrel::test
