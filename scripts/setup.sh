#!/usr/bin/env bash
# Installs every build and test dependency of Kestrel: Debian 12 packages, then LibTorch as the CUDA
# build of a pinned torch from PyPI, in a virtual environment outside the checkout (reused by later
# runs and by CI). Idempotent: what is present is left alone. Needs root (or sudo) for the packages.
# - torch 2.11.0: the version the GPU machines run; PyPI's wheel of it is the CUDA 13.0 build
#   (Requires-Dist cuda-toolkit 13.0.2, nvidia-cudnn-cu13, nvidia-nccl-cu13), whose LibTorch also runs
#   on a CPU. Its venv also gives torchrun, to launch and restart data-parallel jobs.
# - libgloo-dev: the wheel ships c10d with Gloo built in but not Gloo's headers, which its
#   ProcessGroupGloo.hpp includes (data parallel on CPUs, src/distributed).
# - python3-venv: the virtual environment the wheel goes into.
# The venv's path is printed by scripts/torch_env.sh, which build.sh and the tests use.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(
  build-essential cmake ninja-build ccache pkg-config
  python3 python3-venv
  libopencv-dev libturbojpeg0-dev libjpeg62-turbo-dev
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev
  liblmdb-dev libgtest-dev libbenchmark-dev
  libgloo-dev
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "[setup] installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "[setup] all Debian packages present"
fi

source scripts/torch_env.sh
if "$KESTREL_TORCH_VENV/bin/python" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$KESTREL_TORCH_VERSION')" 2>/dev/null; then
  echo "[setup] torch $KESTREL_TORCH_VERSION present in $KESTREL_TORCH_VENV"
else
  echo "[setup] installing torch $KESTREL_TORCH_VERSION (CUDA 13.0 LibTorch, ~5 GB) into $KESTREL_TORCH_VENV"
  rm -rf "$KESTREL_TORCH_VENV"
  # Debian's python3 (3.11): the interpreter a fresh machine has, whatever else is on PATH.
  /usr/bin/python3 -m venv "$KESTREL_TORCH_VENV"
  "$KESTREL_TORCH_VENV/bin/pip" install -q --disable-pip-version-check "torch==$KESTREL_TORCH_VERSION"
fi
