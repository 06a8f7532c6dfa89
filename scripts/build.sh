#!/usr/bin/env bash
# Configures and builds Kestrel into ./build (Release, ccache, Ninja) against the pinned CUDA LibTorch
# that setup.sh installs (scripts/torch_env.sh). Extra args go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/torch_env.sh
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"  # relative paths in the hashes: a fresh clone elsewhere (CI) hits the cache
# The CUDA toolkit (nvcc, cuDNN, NCCL headers) that a CUDA LibTorch's CMake config looks for.
[ -d /usr/local/cuda/bin ] && export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$(kestrel_torch_prefix)" "$@" >/dev/null
# Compiling against LibTorch needs ~1.5 GB per job; two jobs fit this machine's 2 cores.
ninja -C build -j"$(nproc)"
