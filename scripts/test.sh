#!/usr/bin/env bash
# Set up, build and run the whole test suite, then its torch-free part under ASan/UBSan (what CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
source scripts/torch_env.sh
export OMP_WAIT_POLICY=PASSIVE PATH="$KESTREL_TORCH_VENV/bin:$PATH"  # torchrun, for the data-parallel journeys
(cd build && ctest --output-on-failure -j2 --timeout 900)
# The torch-free suites again under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan).
bash scripts/sanitize.sh asan
