#!/bin/bash
# dq_fused_ab.sh - A/B of the opt-in fused dQ conversion (FA4JIT_SM90_BWD_DQ_FUSED=1: the
# 80-query backward main converts dQ at the end of each CTA's walk, bwd_post does not run;
# notes/sm90-bwd.md, sessions 21-22: correct, slower), on the GPU machine, from the repository
# root, after
# `bash scripts/device_carry.sh` here:
#   cp bench/sm90/dq_fused_ab.sh .devcarry/ && (device tool) bash .devcarry/dq_fused_ab.sh
#   with carry [".devcarry", "build-bench-carry"]
# The variable is read once a process and changes the backward programs' options (so their cache
# keys): every process below runs one setting. Each step has its own timeout (a hang in a new
# kernel costs that step, not the call). Logs and summary.txt go to $OUT/fz (tar: fz.tgz).
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FA4JIT_CACHE_MODE=off FA4_TEST_PATH=sm90
O=${OUT:-/tmp/fz-out}/fz
mkdir -p "$O"
S="$O/summary.txt"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader >"$S" 2>&1
date -u >>"$S"
# 1. correctness with the conversion on: the quick suite, then the cases that exercise its edges
#    (block masks and their step cuts, GQA split and unsplit, varlen, D 96's 32 columns past head_dim)
FA4JIT_SM90_BWD_DQ_FUSED=1 timeout 100 "$D/test_gpu_sm80" --no-bench --quick >"$O/quick.log" 2>&1
echo "quick rc=$?" >>"$S"
grep -E "^TOTAL|FAIL" "$O/quick.log" | head -12 >>"$S"
FA4JIT_SM90_BWD_DQ_FUSED=1 timeout 200 "$D/test_gpu_sm80" --no-bench --filter "bm-|gqa|mqa|varlen|d96|offsets|empty-rows" \
    >"$O/edges.log" 2>&1
src=$?
echo "edges rc=$src" >>"$S"
grep -E "^TOTAL|FAIL" "$O/edges.log" | head -12 >>"$S"
# 2. memcheck of one dense and one block-masked case
if command -v compute-sanitizer >/dev/null; then
    for f in "none" "bm-gpu"; do
        FA4JIT_SM90_BWD_DQ_FUSED=1 timeout 120 compute-sanitizer --tool memcheck "$D/test_gpu_sm80" --no-bench \
            --filter "$f" --case 0 >"$O/memcheck_$f.log" 2>&1
        echo "memcheck $f rc=$? $(grep -E 'ERROR SUMMARY' "$O/memcheck_$f.log")" >>"$S"
    done
fi
# 3. timings, bwd_post (0) and fused (1) alternated, two rounds
F="plain S=8192|causal (block|GQA 32:4 causal (bm)|GQA 32:4 dense|document (bm)|prefix-LM (bm per"
for r in 1 2; do
    for v in 0 1; do
        if [ $v = 1 ] && [ $src -eq 124 -o $src -eq 137 ]; then echo "bench fused skipped (hang)" >>"$S"; continue; fi
        FA4JIT_SM90_BWD_DQ_FUSED=$v timeout 60 "$D/test_gpu_sm80" --bench-only --filter "$F" >"$O/bench_${v}_$r.log" 2>&1
        echo "== round $r fused=$v rc=$?" >>"$S"
        grep BENCH "$O/bench_${v}_$r.log" | sed 's/(fwd dynamic)//' >>"$S"
    done
done
cat "$S"
cd "$O/.." && tar czf fz.tgz fz
