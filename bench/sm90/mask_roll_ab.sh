#!/bin/bash
# mask_roll_ab.sh - GPU A/B of the opt-in rolled mask of the sm90 forward (FA4JIT_SM90_FWD_MASK_ROLL=4:
# mask_mod evaluated in a loop unrolled 4 times; a third less forward code and cold compile for the
# gathering and integer-heavy masks, README and notes/compile-time.md session 22), on the GPU
# machine, from the repository root, after `bash scripts/device_carry.sh` here:
#   cp bench/sm90/mask_roll_ab.sh .devcarry/ && (device tool) bash .devcarry/mask_roll_ab.sh
#   with carry [".devcarry", "build-bench-carry"]
# The variable is read at each compile and keys the cache: each process below runs one setting.
# Steps have their own timeouts and the whole run a budget (END_S, default 300 s), most important
# first. Logs and summary.txt go to $OUT/mr; bench/sm90/ab_report.py turns the summary into
# JSON, markdown and a plot (argument fwd).
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FA4JIT_CACHE_DIR=/tmp/fa4jit-mr-cache FA4_TEST_PATH=sm90
O=${OUT:-/tmp/mr-out}/mr
mkdir -p "$O"
S="$O/summary.txt"
END=${END_S:-300}
fits() { [ $((END - SECONDS)) -gt "$1" ]; }
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader; date -u; echo "commit $(cat "$D/COMMIT")"; } >"$S" 2>&1
# 1. correctness with the rolled mask: every suite case of a mask_mod the knob changes
FA4JIT_SM90_FWD_MASK_ROLL=4 timeout 150 "$D/test_gpu_sm80" --no-bench \
    --filter "causal|window|document|doc_|prefix|longformer|dilated|block_diag|sink|bm-" >"$O/suite.log" 2>&1
q=$?
echo "suite rc=$q t=$SECONDS $(grep -E '^TOTAL' "$O/suite.log")" >>"$S"
grep FAIL "$O/suite.log" | head -8 >>"$S"
# every shipped mod through its PyTorch twin, forward and backward against float64 (the mask mods the
# C suite has no case for: longformer, dilated_window, attention_sink, block_diagonal, ...)
FA4JIT_SM90_FWD_MASK_ROLL=4 FA4JIT_LIBRARY=$D/libfa4jit.so.0 timeout 120 python3 -m pytest -q tests/python/test_gpu.py \
    -k "shipped_mod_twin or document or block_mask" >"$O/pytest.log" 2>&1
echo "pytest rc=$? t=$SECONDS $(tail -1 "$O/pytest.log")" >>"$S"
# 2. forward speed, default (0) and rolled (4) alternated, two rounds
F="causal (block|sliding window 1024 (bm)|document (bm)|prefix-LM (bm per batch)|GQA 32:4 document"
for r in 1 2; do
    for v in 0 4; do
        fits 40 || break
        FA4JIT_SM90_FWD_MASK_ROLL=$v timeout 60 "$D/test_gpu_sm80" --bench-only --filter "$F" >"$O/bench_${v}_$r.log" 2>&1
        echo "== round $r roll=$v rc=$? t=$SECONDS" >>"$S"
        grep BENCH "$O/bench_${v}_$r.log" | sed 's/  */ /g' >>"$S"
    done
done
# 3. the cold forward compile on this machine, default and rolled (the library's own figure)
for m in longformer dilated_window document attention_sink prefix_lm; do
    fits 10 || break
    for v in 0 4; do
        r=$(FA4JIT_SM90_FWD_MASK_ROLL=$v CUDA_CACHE_DISABLE=1 timeout 20 "$D/fa4jit" compile "mods/$m.mod" --arch sm_90a \
            --path sm90 --no-cache --kernels fwd 2>&1 | grep -E "miss" | awk '{print $(NF-1), $NF}')
        echo "compile $m roll=$v: $r" >>"$S"
    done
done
cat "$S"
