#!/usr/bin/env bash
# Set up, build, and train a small detector on the built-in synthetic demo dataset.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./build/kestrel train "$@"
