#!/usr/bin/env bash
# Builds and runs tests under the sanitizers, each in a build folder of its own (build-asan, build-tsan).
#   bash scripts/sanitize.sh asan        AddressSanitizer + UndefinedBehaviorSanitizer, the torch-free
#                                        suites (core, data, report, profile): what CI runs
#   bash scripts/sanitize.sh asan-all    the same over the whole ctest suite (LibTorch's tests too; long)
#   bash scripts/sanitize.sh tsan        ThreadSanitizer, the torch-free suites (the loader's threads)
# Suppressions for reports in code that is not Kestrel's: scripts/sanitizers/*.supp (each entry says why).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/torch_env.sh
MODE="${1:-asan}"
case "$MODE" in
  asan | asan-all) dir=build-asan sanitize=address,undefined ;;
  tsan) dir=build-tsan sanitize=thread ;;
  *) echo "usage: $0 asan | asan-all | tsan" >&2; exit 2 ;;
esac
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime CCACHE_BASEDIR="$PWD"
[ -d /usr/local/cuda/bin ] && export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$(kestrel_torch_prefix)" \
  -DKESTREL_SANITIZE="$sanitize" -DKESTREL_BUILD_BENCH=OFF >/dev/null
if [ "$MODE" = asan-all ]; then
  ninja -C "$dir" -j"$(nproc)"
  label=()
else  # the torch-free test binaries alone: core_*, data_*, report_*, profile_*
  targets=$(ninja -C "$dir" -t targets all | sed -n 's/^\(\(core\|data\|report\|profile\)_[a-z0-9_]*\): CXX_EXECUTABLE_LINKER.*/\1/p')
  # shellcheck disable=SC2086
  ninja -C "$dir" -j"$(nproc)" $targets
  label=(-L torch-free)
fi
supp="$PWD/scripts/sanitizers"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
export OMP_WAIT_POLICY=PASSIVE PATH="$KESTREL_TORCH_VENV/bin:$PATH"  # torchrun, for the data-parallel journeys
cd "$dir" && ctest --output-on-failure -j"$(nproc)" --timeout 1800 "${label[@]}"
