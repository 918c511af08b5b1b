#!/bin/bash
# next_gpu_checks.sh - what sessions 24 and 25 left for the GPU, in priority order, in two device
# calls (PART=1, then PART=2; END_S, default 560 s of command time each):
#   PART 1
#   1. the full sm90 suite on HEAD (session 24's FA4_SM90_AFFINE_KFOLD, row sums by FADD for the
#      folded mods, the FA4_SM90_FWD_FALLBACK levels; session 25's key-only bounds in the split's
#      full copy, 19a47c7);
#   2. compute-sanitizer memcheck on a reduced set (alibi and head_scale's folded forward, the
#      windows (causal_sliding_window now at level 0 with the split), varlen: rows past len_q in
#      the full copy);
#   3. A/B of 19a47c7's full copy against the kernels before it (k_prev: a08a058's), forward:
#      causal, causal sliding window (run.py's "sliding window 1024"), bidirectional window, prefix-LM.
#   PART 2
#   4. FA4_SM90_TILE_FOLD (opt-in, never run on a GPU: rel_bias's tile-add form folded into the
#      softmax): the relbias suite cases with it, then a forward A/B against the default (k_tf1);
#   5. bench/run.py, full, with FlexAttention: the standing table on this build.
# On this machine: bash scripts/device_carry.sh && cp bench/sm90/{next_gpu_checks.sh,device_env.sh,fa4_ab.py} .devcarry/ &&
#   rm -rf .devcarry/k_tf1 .devcarry/k_prev && cp -r src/kernels .devcarry/k_tf1 &&
#   sed -i '1i #define FA4_SM90_TILE_FOLD 1' .devcarry/k_tf1/sm90/softmax.cuh &&
#   mkdir -p /tmp/kp && git archive a08a058 src/kernels | tar -x -C /tmp/kp && cp -r /tmp/kp/src/kernels .devcarry/k_prev
# then (device tool, carry [".devcarry", "build-bench-carry"]) `PART=1 bash .devcarry/next_gpu_checks.sh`,
# then the same with PART=2.
D=$(cd "$(dirname "$0")" && pwd)
END_DEFAULT=560
. "$D/device_env.sh"
PART=${PART:-1}
if [ "$PART" = 1 ]; then
    echo "== 1. full suite ($(left) s left)"
    FA4JIT_CACHE_DIR=/tmp/nx-def timeout 220 "$D/test_gpu_sm80" --no-bench >"$O/suite.log" 2>&1
    echo "full suite rc=$? t=$SECONDS $(grep -E '^TOTAL' "$O/suite.log")"
    grep FAIL "$O/suite.log" | head -8
    echo "== 2. memcheck ($(left) s left)"
    for f in "alibi" "head" "window" "varlen"; do
        [ "$(left)" -gt 200 ] || break
        FA4JIT_CACHE_DIR=/tmp/nx-def timeout 60 compute-sanitizer --tool memcheck --print-limit 10 \
            "$D/test_gpu_sm80" --quick --no-bench --filter "$f" --max-cases 1 >"$O/memcheck_$f.log" 2>&1
        echo "memcheck [$f] rc=$? $(grep -E 'ERROR SUMMARY|^TOTAL' "$O/memcheck_$f.log" | tr '\n' ' ')"
    done
    echo "== 3. key-only full copy A/B ($(left) s left)"
    if [ "$(left)" -gt 60 ]; then
        timeout $(( $(left) - 5 )) python3 "$D/fa4_ab.py" \
            --cases "causal_seqlen:S=4096,mods:sliding_window_1024,mods:bidir._window_1024,mods:prefix-LM" \
            --variants "default,$D/k_prev" --rounds 2 --reps 20 2>&1 | tee "$O/ab_split.log" | grep -E "^AB|^  |rror"
    fi
elif [ "$PART" = 3 ]; then
    # session 25, after b731e18: the suite with its new group T (softmax scales other than
    # 1 / sqrt(D), negative and large), TILE_FOLD on by default and FA4_SM90_FWD_TILE_RUN 8 (its A/B
    # against k_run0: the kernels with it 0, made by
    #   cp -r src/kernels .devcarry/k_run0 && sed -i -e 's/^#define FA4_SM90_FWD_TILE_RUN 8/#define FA4_SM90_FWD_TILE_RUN 0/' \
    #     -e 's/^#define FA4_SM90_RELT_FOLD 1/#define FA4_SM90_RELT_FOLD 0/' .devcarry/k_run0/sm90/softmax.cuh);
    # then the D 256 forward's
    # spread (run.py's D 256 case read 664 and 722 TFLOP/s for the same SASS in session 24)
    echo "== 6. full suite, group T ($(left) s left)"
    # SUITE_FILTER (e.g. "scale|relbias|t5"): only those cases (test_gpu_sm80 --filter)
    FA4JIT_CACHE_DIR=/tmp/nx-def timeout 220 "$D/test_gpu_sm80" --no-bench ${SUITE_FILTER:+--filter "$SUITE_FILTER"} \
        >"$O/suite3.log" 2>&1
    echo "full suite rc=$? t=$SECONDS $(grep -E '^TOTAL' "$O/suite3.log")"
    grep FAIL "$O/suite3.log" | head -8
    grep -E "scale" "$O/suite3.log" | head -8
    echo "== 6b. tile runs and the relative table's fold, A/B ($(left) s left)"
    # k_run0: FA4_SM90_FWD_TILE_RUN 0 and FA4_SM90_RELT_FOLD 0 (rel_bias's and t5_bias's forwards
    # as before each)
    timeout 100 python3 "$D/fa4_ab.py" --cases "plain_seqlen:S=4096,mods:rel._bias_(trainable),mods:T5_bias_(trainable)" \
        --variants "default,$D/k_run0" --rounds 2 --reps 20 2>&1 | tee "$O/ab_run.log" | grep -E "^AB|^  |rror"
    echo "== 6c. what the trainable table costs the backward ($(left) s left)"
    timeout 120 python3 "$D/fa4_ab.py" --cases "mods:rel._bias_(trainable),mods:rel._bias_(fixed),mods:ALiBi,plain_seqlen:S=4096" \
        --variants "default" --rounds 1 --reps 20 --bwd 2>&1 | tee "$O/ab_relbwd.log" | grep -E "^AB|^  |rror"
    echo "== 7. D 256 forward spread ($(left) s left)"
    if [ "$(left)" -gt 60 ]; then
        timeout $(( $(left) - 5 )) python3 "$D/fa4_ab.py" --cases "headdim:D=256,plain_seqlen:S=4096" \
            --variants "default" --rounds 4 --reps 20 2>&1 | tee "$O/ab_d256.log" | grep -E "^AB|^  |rror"
    fi
else
    echo "== 4. FA4_SM90_TILE_FOLD ($(left) s left)"
    FA4JIT_KERNEL_DIR=$D/k_tf1 FA4JIT_CACHE_DIR=/tmp/nx-tf1 timeout 90 "$D/test_gpu_sm80" --no-bench --filter "relbias" \
        >"$O/suite_tf1.log" 2>&1
    echo "relbias cases with TILE_FOLD 1: rc=$? $(grep -E '^TOTAL' "$O/suite_tf1.log")"
    grep FAIL "$O/suite_tf1.log" | head -5
    timeout 120 python3 "$D/fa4_ab.py" --cases "plain_seqlen:S=4096,mods:rel._bias_(trainable)" \
        --variants "default,$D/k_tf1" --rounds 2 --reps 20 2>&1 | tee "$O/ab_tf1.log" | grep -E "^AB|^  |rror"
    echo "== 5. bench/run.py ($(left) s left)"
    if [ "$(left)" -gt 150 ]; then
        timeout $(( $(left) - 5 )) python3 bench/run.py --paths sm90 --no-launch --budget-s $(( $(left) - 40 )) --grace-s 25 \
            --out "$O/run" >"$O/run.log" 2>&1
        echo "run.py rc=$? t=$SECONDS"
        grep -h "^|" "$O"/run/*.md 2>/dev/null | head -40
    fi
fi
echo "done at $SECONDS s"
