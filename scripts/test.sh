#!/usr/bin/env bash
# Set up, build and run the whole test suite (what CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
export OMP_WAIT_POLICY=PASSIVE
cd build && ctest --output-on-failure -j2 --timeout 900
