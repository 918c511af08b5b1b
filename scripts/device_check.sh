#!/usr/bin/env bash
# device_check.sh - the GPU checks of a build, on the GPU machine, from the files of
# scripts/device_carry.sh (.devcarry/): the whole C GPU suite on the sm90 and the sm80 path, the
# example on both paths, the Python GPU tests (every shipped mod through its PyTorch twin, forward
# and backward against float64), the emitted mod functions against their twins and the default math
# functions' error bounds (tests/mod/gpu), and compute-sanitizer memcheck on a few cases. Logs go to
# $OUT (or ./device-check-out); a summary line per step on stdout; exit status 1 if any step failed.
#   bash scripts/device_check.sh [--quick]   (--quick: the quick C suites, no sanitizer)
set -uo pipefail
cd "$(dirname "$0")/.."
c=.devcarry
out=${OUT:-device-check-out}
mkdir -p "$out"
quick=0
[ "${1:-}" = "--quick" ] && quick=1
[ -x "$c/test_gpu_sm80" ] || { echo "device_check: run scripts/device_carry.sh first (no $c/)" >&2; exit 2; }
export LD_LIBRARY_PATH=$PWD/$c:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FA4JIT_LIBRARY=$PWD/$c/libfa4jit.so.0
export FA4JIT_CACHE_DIR=${FA4JIT_CACHE_DIR:-/tmp/fa4jit-device-check-cache}
fail=0
step() { # name, log file, command...
    local name=$1 log=$2
    shift 2
    local t0=$SECONDS
    "$@" >"$out/$log" 2>&1
    local rc=$?
    local tail
    tail=$(grep -E "TOTAL|passed|failed|ERROR SUMMARY|PASS|FAIL|SKIP|skipped|Error" "$out/$log" | tail -1)
    printf '%-28s rc=%d %4ds  %s\n' "$name" "$rc" $((SECONDS - t0)) "$tail"
    [ "$rc" -eq 0 ] || fail=1
}
echo "build $(cat $c/COMMIT); $(nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader 2>/dev/null || echo 'no nvidia-smi')"
suite=()
[ "$quick" -eq 1 ] && suite=(--quick)
step "C suite, sm90 path" suite90.txt env FA4_TEST_PATH=sm90 "$c/test_gpu_sm80" "${suite[@]}" --no-bench
step "C suite, sm80 path" suite80.txt env FA4_TEST_PATH=sm80 "$c/test_gpu_sm80" "${suite[@]}" --no-bench
for p in sm90 sm80; do
    step "example, $p" "example_$p.txt" env FA4JIT_PATH=$p "$c/fa4jit_example"
done
step "Python GPU tests" pytest_gpu.txt python3 -m pytest -q tests/python/test_gpu.py
step "emitted mods vs twins" run_emitted.txt python3 tests/mod/gpu/run_emitted.py "$c/dump"
step "default math error bounds" mathfn.txt python3 tests/mod/gpu/check_mathfn.py "$c/dump"
if [ "$quick" -eq 0 ]; then
    for f in "bf16 d128 alibi_causal" "varlen" "deterministic"; do
        step "memcheck [$f]" "memcheck_${f// /_}.txt" compute-sanitizer --tool memcheck --print-limit 10 \
            "$c/test_gpu_sm80" --quick --no-bench --filter "$f" --max-cases 1
    done
fi
exit $fail
