#!/usr/bin/env bash
# test.sh - every test: build with warnings as errors, AddressSanitizer and UndefinedBehaviorSanitizer,
# run the cmocka suites (mod language, cache and its fault tests, CLI, API, launch validation, NVRTC
# compiles of every shipped mod for sm_90a and sm_80 with the resource guard), the GPU tests (which
# skip with a reason where there is no GPU) and the Python tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
build=${FA4JIT_TEST_BUILD:-build-test}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DFA4JIT_SANITIZE=ON -DFA4JIT_TEST_NVRTC_MEMO=ON \
      -DCMAKE_C_FLAGS="-Werror" >/dev/null
cmake --build "$build" -j"$(nproc)"
# NVRTC keeps process-lifetime allocations that LeakSanitizer would report as leaks.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
(cd "$build" && ctest --output-on-failure -j"$(nproc)")
# Python tests with Debian's interpreter (python3-pytest, python3-torch for the translator); the
# library under test is the sanitizer build, so the ASan runtime must be loaded first. They share
# ctest's NVRTC memo of this run (CMakeLists.txt: a program the C tests compiled is not compiled
# again; a miss is compiled by the unsanitized helper).
if [ -d tests/python ]; then
    FA4JIT_LIBRARY="$PWD/$build/libfa4jit.so" \
        FA4JIT_TEST_NVRTC_MEMO="$PWD/$build/nvrtc-memo" \
        FA4JIT_TEST_NVRTC_HELPER="$PWD/$build/nvrtc_memo_helper" \
        ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0 \
        LD_PRELOAD="$(gcc -print-file-name=libasan.so)" \
        /usr/bin/python3 -m pytest -q tests/python
fi
