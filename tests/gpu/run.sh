#!/bin/bash
# run.sh - runs the sm80 GPU suite on the device machine (or any machine with a GPU).
#
#   tests/gpu/run.sh [suite|quick|sanitize|trap|bench] [extra test_gpu_sm80 arguments]
#
# The binary comes prebuilt (the device machine has no libffi/cmocka/xxhash headers): build it with
#   cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release && cmake --build build-gpu --target test_gpu_sm80
#   mkdir -p build-gpu-carry && cp build-gpu/test_gpu_sm80 build-gpu-carry/
# and carry build-gpu-carry. Full logs go to $OUT (or /tmp/fa4-gpu-out); the terminal gets the tail.
set -u
HERE=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${FA4_GPU_BIN:-$HERE/build-gpu-carry}
export LD_LIBRARY_PATH=$BIN:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FA4JIT_CACHE_MODE=off
OUTDIR=${OUT:-/tmp/fa4-gpu-out}
mkdir -p "$OUTDIR"
mode=${1:-suite}
[ $# -gt 0 ] && shift
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
    --format=csv >"$OUTDIR/gpu.txt" 2>&1 || true
cat "$OUTDIR/gpu.txt"
case "$mode" in
suite | quick)
    args=()
    [ "$mode" = quick ] && args+=(--quick)
    "$BIN/test_gpu_sm80" "${args[@]}" "$@" >"$OUTDIR/suite.log" 2>&1
    rc=$?
    grep -E "^compiled|COMPILE FAILED|FAIL|note:" "$OUTDIR/suite.log" | head -60
    sed -n '/^SUMMARY/,$p' "$OUTDIR/suite.log"
    echo "suite rc=$rc"
    ;;
sanitize)
    CS=${COMPUTE_SANITIZER:-/usr/local/cuda/bin/compute-sanitizer}
    rc=0
    for tool in memcheck racecheck; do
        filters=("bf16 d128 alibi_causal" "varlen" "bm-gpu" "deterministic" "d256")
        [ "$tool" = racecheck ] && filters=("bf16 d128 alibi_causal" "bm-random")
        for f in "${filters[@]}"; do
            tag=$(echo "$tool-$f" | tr ' /' '__')
            timeout 120 "$CS" --tool "$tool" --print-limit 20 "$BIN/test_gpu_sm80" --quick --no-bench \
                --filter "$f" --max-cases 1 >"$OUTDIR/san_$tag.log" 2>&1
            r=$?
            echo "$tool [$f]: rc=$r $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|TOTAL' "$OUTDIR/san_$tag.log" | tr '\n' ' ')"
            [ $r -ne 0 ] && rc=$r
        done
    done
    echo "sanitize rc=$rc"
    ;;
trap)
    "$BIN/test_gpu_sm80" --checked-trap 2>&1 | tee "$OUTDIR/trap.log" | grep -E "CHECKED TRAP|FAIL"
    ;;
bench)
    "$BIN/test_gpu_sm80" --bench-only "$@" 2>&1 | tee "$OUTDIR/bench.log" | grep -E "BENCH|compiled|FAIL"
    ;;
*)
    echo "unknown mode $mode" >&2
    exit 2
    ;;
esac
