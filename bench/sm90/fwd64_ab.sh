#!/bin/bash
# ab.sh - helper fwd64's A/B of the three-consumer D 64 sm90 forward (branch fwd64), on the GPU
# machine, from the repository root:  bash .devrun-fwd64/ab.sh   (carry [".devrun-fwd64"])
# One binary (test_gpu_sm80 built on fwd64; the library and kernels are linked in): base = the
# default build (byte-identical cubins to main's), c3 = FA4JIT_SM90_FWD64_CONSUMERS=3 (read at
# each compile; plain, causal, windows, prefix_lm, alibi at padded D 64 get three consumers with
# the overlap, other mods fall back to the default build). Logs and a summary go to $OUT.
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FA4JIT_CACHE_MODE=off FA4_TEST_PATH=sm90
O=${OUT:-/tmp/fwd64-out}
mkdir -p "$O"
T0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader >"$O/gpu.txt" 2>&1
date -u >>"$O/gpu.txt"
# 1. correctness of the variant: the quick suite's D 64 cases (group L: 384-row query blocks,
#    dense and varlen 192-row tiles; the others' block masks run the 128-row fallback)
FA4JIT_SM90_FWD64_CONSUMERS=3 timeout 60 "$D/test_gpu_sm80" --no-bench --quick --filter 'd64' >"$O/suite_c3.log" 2>&1
src=$?
echo "suite_c3 rc=$src ($(( $(date +%s) - T0 )) s)" >"$O/summary.txt"
grep -E "FAIL|BAD|COMPILE|note:" "$O/suite_c3.log" | head -20 >>"$O/summary.txt"
grep -E "^compiled|^TOTAL" "$O/suite_c3.log" >>"$O/summary.txt"
sed -n '/^SUMMARY/,$p' "$O/suite_c3.log" | grep -v "^TOTAL" | head -24 >>"$O/summary.txt"
# 2. timings, base and c3 alternated, two rounds
for r in 1 2; do
    for v in base c3; do
        # a variant that hung in the suite (timeout: rc 124) is not timed
        if [ $v = c3 ] && [ $src -eq 124 -o $src -eq 137 ]; then echo "bench c3 skipped" >>"$O/summary.txt"; continue; fi
        if [ $v = c3 ]; then export FA4JIT_SM90_FWD64_CONSUMERS=3; else unset FA4JIT_SM90_FWD64_CONSUMERS; fi
        timeout 45 "$D/test_gpu_sm80" --bench-only --filter 'D=64' >"$O/bench_${v}_$r.log" 2>&1
        echo "bench $v round $r rc=$? ($(( $(date +%s) - T0 )) s) $(grep -E '^compiled' "$O/bench_${v}_$r.log")" >>"$O/summary.txt"
    done
done
unset FA4JIT_SM90_FWD64_CONSUMERS
{
    echo "fwd TFLOP/s (median of 11), rounds 1 / 2:"
    for shape in "plain D=64 (B=8) " "plain D=64 (B=8 H=16)" "causal D=64 (bm) " "causal D=64 (bm q384)"; do
        line="$shape:"
        for v in base c3; do
            vals=""
            for r in 1 2; do
                x=$(grep -F "BENCH $shape" "$O/bench_${v}_$r.log" | grep -F "| bwd" | head -1 |
                    sed -n 's/.*: fwd *[0-9.]* ms *\([0-9.]*\) TFLOP.*/\1/p')
                vals="$vals ${x:-?}"
            done
            line="$line  $v$vals"
        done
        echo "$line"
    done
} >>"$O/summary.txt"
cat "$O/summary.txt"
tar czf "$O/logs.tgz" -C "$O" $(cd "$O" && ls *.log gpu.txt 2>/dev/null)
rm -f "$O"/*.log
