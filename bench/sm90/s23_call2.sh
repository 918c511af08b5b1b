#!/bin/bash
# s23_call2.sh - session 23's second device call: (1) bench/sm90/ncu_stalls_vs_cudnn.sh (stall
# reasons and pipe use of our forward and backward main beside cuDNN's), (2) the rolled mask at
# N = 8 (call 1 measured N = 4: document's forward -19%, sliding window -8%): forward A/B and cold
# compiles on the GPU machine, alternated. Budget END_S (default 420 s).
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
END=${END_S:-420}
OUT=${OUT:-/tmp/s23-out}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader; date -u; echo "commit $(cat "$D/COMMIT")"
echo "== 1. ncu stalls ($((END - SECONDS)) s left)"
END_S=$((END - 130)) OUT=$OUT bash "$D/ncu_stalls_vs_cudnn.sh" 2>&1 | tail -80
echo "== 2. rolled mask N=8 ($((END - SECONDS)) s left)"
export FA4JIT_CACHE_DIR=/tmp/fa4jit-s23-cache FA4_TEST_PATH=sm90
F="causal (block|sliding window 1024 (bm)|document (bm)|prefix-LM (bm per batch)"
for r in 1 2; do
    for v in 0 8 4; do
        [ $((END - SECONDS)) -gt 60 ] || break
        echo "== round $r roll=$v"
        FA4JIT_SM90_FWD_MASK_ROLL=$v timeout 40 "$D/test_gpu_sm80" --bench-only --filter "$F" 2>&1 | grep BENCH | sed 's/  */ /g; s/| bwd.*//'
    done
done
for r in 1 2; do
    for m in longformer dilated_window document; do
        for v in 0 8 4; do
            [ $((END - SECONDS)) -gt 8 ] || break
            x=$(FA4JIT_SM90_FWD_MASK_ROLL=$v CUDA_CACHE_DISABLE=1 timeout 20 "$D/fa4jit" compile "mods/$m.mod" --arch sm_90a \
                --path sm90 --no-cache --kernels fwd 2>&1 | grep -E "miss" | awk '{print $(NF-1), $NF}')
            echo "compile r$r $m roll=$v: $x"
        done
    done
done
[ $((END - SECONDS)) -gt 40 ] && FA4JIT_SM90_FWD_MASK_ROLL=8 timeout 35 "$D/test_gpu_sm80" --no-bench \
    --filter "causal|window|document|doc_|prefix|bm-" --max-cases 60 2>&1 | grep -E "^TOTAL|FAIL" | head -5
uptime
echo "done at $SECONDS s"
