#!/usr/bin/env bash
# deps.sh - install what fa4jit needs to build and test on Debian 12 (as root), only what is missing.
# The CUDA toolkit is expected at /usr/local/cuda (NVRTC and headers; no GPU or driver needed).
set -euo pipefail
need=()
for pkg in build-essential cmake pkg-config libffi-dev libxxhash-dev libcmocka-dev python3 python3-pytest python3-torch python3-mpmath; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "deps: installing ${need[*]}"
    if [ "$(id -u)" != 0 ]; then
        echo "deps: not root; install these yourself: apt-get install ${need[*]}" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if [ ! -x /usr/local/cuda/bin/nvcc ] && [ ! -f /usr/local/cuda/include/nvrtc.h ]; then
    echo "deps: the CUDA toolkit is not at /usr/local/cuda (NVRTC and headers are needed)" >&2
    exit 1
fi
