#!/bin/bash
# next_gpu_checks.sh - what session 24 left for the GPU (its device time ran out after the KFOLD and
# row-sum A/Bs), in priority order within one call's budget (END_S, default 560 s of command time):
#   1. the full sm90 suite on HEAD (24d3fa9 and later: FA4_SM90_AFFINE_KFOLD, FA4_SM90_ROWSUM_MMA off
#      for the folded mods, the forward's FA4_SM90_FWD_FALLBACK levels; session 24 ran only the
#      affine / score / window cases and the PyTorch twins on them);
#   2. compute-sanitizer memcheck on a reduced set (alibi and head_scale's new forward, a masked
#      forward at fallback level 1 (causal_sliding_window: the suite's "window" cases), varlen);
#   3. FA4_SM90_TILE_FOLD (opt-in, never run on a GPU: rel_bias's tile-add form folded into the
#      softmax, no FMA a score on its tiles away from the diagonal): the relbias suite cases with it,
#      then a forward A/B against the default (kernel dir k_tf1);
#   4. bench/run.py, full, with FlexAttention: the standing table on this build.
# On this machine: bash scripts/device_carry.sh && cp bench/sm90/{next_gpu_checks.sh,device_env.sh,fa4_ab.py} .devcarry/ &&
#   cp -r src/kernels .devcarry/k_tf1 && sed -i '1i #define FA4_SM90_TILE_FOLD 1' .devcarry/k_tf1/sm90/softmax.cuh
# then (device tool, carry [".devcarry", "build-bench-carry"]) `bash .devcarry/next_gpu_checks.sh`.
D=$(cd "$(dirname "$0")" && pwd)
END_DEFAULT=560
. "$D/device_env.sh"
echo "== 1. full suite ($(left) s left)"
FA4JIT_CACHE_DIR=/tmp/nx-def timeout 200 "$D/test_gpu_sm80" --no-bench >"$O/suite.log" 2>&1
echo "full suite rc=$? t=$SECONDS $(grep -E '^TOTAL' "$O/suite.log")"
grep FAIL "$O/suite.log" | head -8
echo "== 2. memcheck ($(left) s left)"
for f in "alibi" "head" "window" "varlen"; do
    [ "$(left)" -gt 330 ] || break
    FA4JIT_CACHE_DIR=/tmp/nx-def timeout 60 compute-sanitizer --tool memcheck --print-limit 10 \
        "$D/test_gpu_sm80" --quick --no-bench --filter "$f" --max-cases 1 >"$O/memcheck_$f.log" 2>&1
    echo "memcheck [$f] rc=$? $(grep -E 'ERROR SUMMARY|^TOTAL' "$O/memcheck_$f.log" | tr '\n' ' ')"
done
echo "== 3. FA4_SM90_TILE_FOLD ($(left) s left)"
if [ "$(left)" -gt 300 ]; then
    FA4JIT_KERNEL_DIR=$D/k_tf1 FA4JIT_CACHE_DIR=/tmp/nx-tf1 timeout 90 "$D/test_gpu_sm80" --no-bench --filter "relbias" \
        >"$O/suite_tf1.log" 2>&1
    echo "relbias cases with TILE_FOLD 1: rc=$? $(grep -E '^TOTAL' "$O/suite_tf1.log")"
    grep FAIL "$O/suite_tf1.log" | head -5
    timeout 120 python3 "$D/fa4_ab.py" --cases "plain_seqlen:S=4096,mods:rel._bias_(trainable)" \
        --variants "default,$D/k_tf1" --rounds 2 --reps 20 2>&1 | tee "$O/ab_tf1.log" | grep -E "^AB|^  "
fi
echo "== 4. bench/run.py ($(left) s left)"
if [ "$(left)" -gt 150 ]; then
    timeout $(( $(left) - 5 )) python3 bench/run.py --paths sm90 --no-launch --budget-s $(( $(left) - 40 )) --grace-s 25 \
        --out "$O/run" >"$O/run.log" 2>&1
    echo "run.py rc=$? t=$SECONDS"
    grep -h "^|" "$O"/run/*.md 2>/dev/null | head -40
fi
echo "done at $SECONDS s"
