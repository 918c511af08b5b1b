#!/usr/bin/env bash
# device_carry.sh - builds, on this machine, what scripts/device_check.sh runs on the GPU machine
# (which has no libffi, cmocka or xxhash headers), from a snapshot of a commit (default HEAD), never
# from the working tree: kernel sources are embedded into the library at build time, so someone's
# half-edited kernel would otherwise be measured as main.
#   bash scripts/device_carry.sh [REV]
# Writes .devcarry/ (git-ignored): test_gpu_sm80, fa4jit, fa4jit_example, libfa4jit.so.0 (a real
# file), libffi.so.8, dump/ (the emitted mod headers of every shipped mod and test mod, for
# tests/mod/gpu), COMMIT; and build-bench-carry/{libfa4jit.so,libffi.so.8,COMMIT} for bench/run.py.
# Then: the device tool's run with carry [".devcarry", "build-bench-carry"] and the command
# `bash scripts/device_check.sh` (see notes/DEVICE.md).
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:-HEAD}
commit=$(git rev-parse --short "$rev")
snap=${FA4JIT_SNAPSHOT_DIR:-/tmp/fa4jit-devsnap}
rm -rf "$snap" && mkdir -p "$snap"
git archive "$commit" | tar -x -C "$snap"
bash scripts/deps.sh >/dev/null
cmake -S "$snap" -B "$snap/build" -DCMAKE_BUILD_TYPE=Release -DFA4JIT_BUILD_TESTS=ON >/dev/null
cmake --build "$snap/build" -j"$(nproc)" >/dev/null
# (awk reads to the end: an early exit would SIGPIPE ldconfig, which pipefail turns into rc 141)
ffi=$(ldconfig -p | awk '/libffi\.so\.8 / && !f {print $NF; f = 1}')
[ -n "$ffi" ] || { echo "device_carry: libffi.so.8 not found on this machine" >&2; exit 1; }
out=.devcarry
rm -rf "$out" && mkdir -p "$out/dump"
for f in test_gpu_sm80 fa4jit fa4jit_example; do
    [ -x "$snap/build/$f" ] || { echo "device_carry: $f was not built" >&2; exit 1; }
    cp "$snap/build/$f" "$out/"
done
cp -L "$snap/build/libfa4jit.so.0" "$out/libfa4jit.so.0"
cp -L "$ffi" "$out/libffi.so.8"
FA4_MOD_DUMP_DIR="$PWD/$out/dump" "$snap/build/test_mod_nvrtc" >/dev/null
FA4_MOD_DUMP_DIR="$PWD/$out/dump" "$snap/build/test_mod_eval" >/dev/null
echo "$commit" > "$out/COMMIT"
mkdir -p build-bench-carry
cp -L "$snap/build/libfa4jit.so.0" build-bench-carry/libfa4jit.so
cp -L "$ffi" build-bench-carry/libffi.so.8
echo "$commit" > build-bench-carry/COMMIT
echo "device_carry: $commit -> $out/ ($(ls "$out/dump" | wc -l) mod headers) and build-bench-carry/"
