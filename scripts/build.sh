#!/usr/bin/env bash
# Configures and builds Kestrel into ./build (Release, ccache, Ninja). Extra args go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
# Compiling against LibTorch needs ~1.5 GB per job; two jobs fit this machine's 2 cores.
ninja -C build -j"$(nproc)"
