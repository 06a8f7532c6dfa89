// The one place where LibTorch versions differ for Kestrel: Debian's 1.13 (CPU) and the 2.x inside a
// CUDA PyTorch. Autocast's thread-local switches were per-device functions in 1.13
// (set_cpu_enabled, set_autocast_cpu_dtype, set_enabled for CUDA) and take a device type in 2.x
// (set_autocast_enabled(kCPU, ...)); the 1.13 names are deprecated there.
#pragma once
#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace kestrel::compat {

#if TORCH_VERSION_MAJOR >= 2 && TORCH_VERSION_MINOR >= 4 || TORCH_VERSION_MAJOR >= 3
inline bool autocast_enabled(bool cuda) { return at::autocast::is_autocast_enabled(cuda ? at::kCUDA : at::kCPU); }
inline void set_autocast_enabled(bool cuda, bool on) { at::autocast::set_autocast_enabled(cuda ? at::kCUDA : at::kCPU, on); }
inline at::ScalarType autocast_dtype(bool cuda) { return at::autocast::get_autocast_dtype(cuda ? at::kCUDA : at::kCPU); }
inline void set_autocast_dtype(bool cuda, at::ScalarType t) { at::autocast::set_autocast_dtype(cuda ? at::kCUDA : at::kCPU, t); }
#else
inline bool autocast_enabled(bool cuda) { return cuda ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled(); }
inline void set_autocast_enabled(bool cuda, bool on) {
  if (cuda)
    at::autocast::set_enabled(on);
  else
    at::autocast::set_cpu_enabled(on);
}
inline at::ScalarType autocast_dtype(bool cuda) {
  return cuda ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
}
inline void set_autocast_dtype(bool cuda, at::ScalarType t) {
  if (cuda)
    at::autocast::set_autocast_gpu_dtype(t);
  else
    at::autocast::set_autocast_cpu_dtype(t);
}
#endif

// Entering and leaving an autocast region as torch.autocast does: the cast cache of weights lives
// until the outermost region closes.
inline void autocast_enter() { at::autocast::increment_nesting(); }
inline void autocast_exit() {
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
}

}  // namespace kestrel::compat
