#!/usr/bin/env bash
# run.sh - the main job on a fresh machine: install what is missing, build fa4jit (Release), check
# every shipped mod, precompile all of them for sm_90a (no GPU needed) into a cache directory and
# print the resource table; where a GPU is present, also run attention with a mod and check it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DFA4JIT_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
cli=build/fa4jit
$cli --version
echo "== checking every shipped mod"
for m in mods/*.mod; do $cli check "$m"; done
cache=${FA4JIT_CACHE_DIR:-$PWD/build/kernel-cache}
echo "== precompiling every shipped mod for sm_90a into $cache"
$cli compile --arch sm_90a --cache-dir "$cache" --plain mods/*.mod
echo "== the cache"
$cli cache stats --cache-dir "$cache"
echo "== GPU"
build/fa4jit_example
