#!/usr/bin/env bash
# Installs every build and test dependency of Kestrel from Debian 12 packages.
# Idempotent: packages already present are left alone. Needs root (or sudo).
# libgloo-dev: the headers c10d's Gloo process group includes (data parallel, src/dist);
# python3-torch: torchrun, to launch and restart data-parallel jobs as PyTorch users do (tests too).
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build ccache pkg-config
  libtorch-dev libopenblas0-openmp
  libopencv-dev libturbojpeg0-dev libjpeg62-turbo-dev
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev
  liblmdb-dev libgtest-dev libbenchmark-dev
  libgloo-dev python3-torch
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
