// Seconds elapsed on the steady clock: the one helper every timing line and report uses.
#pragma once
#include <chrono>

namespace kestrel {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace kestrel
