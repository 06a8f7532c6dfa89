# Sourced by the other scripts: where the pinned torch lives (a venv in the user's cache folder, outside
# the checkout) and the CMake prefixes that find its LibTorch. KESTREL_TORCH_VENV may name another
# environment with the same torch.
KESTREL_TORCH_VERSION=2.11.0
KESTREL_TORCH_VENV="${KESTREL_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/kestrel/torch-$KESTREL_TORCH_VERSION}"
# torch.utils.cmake_prefix_path finds TorchConfig.cmake; the torch folder itself goes first so that its
# lib/ wins over any other LibTorch on the system paths (TorchConfig's find_library searches those first).
kestrel_torch_prefix() {
  "$KESTREL_TORCH_VENV/bin/python" -c 'import os, torch, torch.utils; print(os.path.dirname(torch.__file__) + ";" + torch.utils.cmake_prefix_path)'
}
