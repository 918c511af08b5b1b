#!/bin/bash
# pending_gpu_checks.sh - the GPU checks session 22 left (no device time was left to run them), in
# priority order, within one device call's budget (END_S, default 520 s of command time):
#   1. bench/sm90/mask_roll_ab.sh: the opt-in rolled mask of the forward (FA4JIT_SM90_FWD_MASK_ROLL=4):
#      its correctness on the mask suites and the PyTorch twins, its forward speed against the
#      default, the cold compile on the GPU machine;
#   2. the opt-in fused dQ conversion with 2c7ae91's count kernel (never run on a GPU): a block-mask
#      suite subset with it, and causal / document backward A/B (session 22 measured 1.45-1.67x
#      slower with the old, one-CTA count kernel);
#   3. bench/sm90/ncu_bwd_vs_cudnn.sh: our backward main kernel beside cuDNN's under ncu.
# On the GPU machine, from the repository root, after `bash scripts/device_carry.sh` here and
#   cp bench/sm90/{pending_gpu_checks.sh,mask_roll_ab.sh,ncu_bwd_vs_cudnn.sh,cudnn_bwd_once.py} .devcarry/
# then (device tool, carry [".devcarry", "build-bench-carry"]) `bash .devcarry/pending_gpu_checks.sh`.
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
OUT=${OUT:-/tmp/pending-out}
END=${END_S:-520}
left() { echo $((END - SECONDS)); }
echo "== 1. rolled mask ($(left) s left)"
END_S=$(( $(left) / 2 < 280 ? $(left) / 2 : 280 )) OUT=$OUT bash "$D/mask_roll_ab.sh" | tail -40
echo "== 2. fused dQ with the fixed count kernel ($(left) s left)"
if [ "$(left)" -gt 90 ]; then
    export FA4JIT_CACHE_DIR=/tmp/fa4jit-pending-cache FA4_TEST_PATH=sm90
    FA4JIT_SM90_BWD_DQ_FUSED=1 timeout 40 "$D/test_gpu_sm80" --no-bench --filter "bm-" --max-cases 40 >"$OUT/fused_suite.log" 2>&1
    echo "fused bm- suite rc=$? $(grep -E '^TOTAL' "$OUT/fused_suite.log")"
    F="causal (block|document (bm)|GQA 32:4 dense"
    for v in 0 1; do
        echo "== round 1 fused=$v"
        FA4JIT_SM90_BWD_DQ_FUSED=$v timeout 30 "$D/test_gpu_sm80" --bench-only --filter "$F" 2>&1 | grep BENCH | sed 's/  */ /g'
    done
    FA4JIT_SM90_BWD_DQ_FUSED=1 timeout 30 ncu --metrics gpu__time_duration.sum -k regex:expect80 --launch-count 1 \
        "$D/test_gpu_sm80" --bench-only --filter "causal (block" 2>&1 | grep -E "gpu__time" | sed 's/^/expect80 /'
fi
echo "== 3. ncu: our backward main beside cuDNN's ($(left) s left)"
if [ "$(left)" -gt 120 ]; then
    NCU_TIMEOUT=$(( ($(left) - 20) / 4 )) OUT=$OUT bash "$D/ncu_bwd_vs_cudnn.sh" | tail -120
fi
echo "done at $SECONDS s"
