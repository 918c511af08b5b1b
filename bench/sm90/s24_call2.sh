#!/bin/bash
# s24_call2.sh - session 24's second device call: FA4_SM90_AFFINE_KFOLD (the affine score_mod's ks
# in the softmax's exponent factor; 0ba7ab1) checked and timed, then ncu's per-instruction counts of
# the D 64 backward main (where its step spends its issue slots; D 64 f+b is 0.92 of cuDNN's).
# On this machine: bash scripts/device_carry.sh; cp bench/sm90/{s24_call2.sh,fa4_ab.py,device_env.sh} .devcarry/;
#   cp -r src/kernels .devcarry/k_kf0 && sed -i '1i #define FA4_SM90_AFFINE_KFOLD 0' .devcarry/k_kf0/sm90/config.cuh
#   cp -r src/kernels .devcarry/k_rs0 && sed -i '1i #define FA4_SM90_ROWSUM_MMA 0' .devcarry/k_rs0/sm90/config.cuh
# then the device tool with carry [".devcarry", "build-bench-carry"]: bash .devcarry/s24_call2.sh
D=$(cd "$(dirname "$0")" && pwd)
END_DEFAULT=575
. "$D/device_env.sh"
echo "== 1. correctness: affine mods, C suite and PyTorch twins ($(left) s left)"
FA4JIT_CACHE_DIR=/tmp/s24-c1 timeout 120 "$D/test_gpu_sm80" --no-bench --filter "alibi|head|score|relbias|t5|window" >"$O/suite.log" 2>&1
echo "suite (alibi|head|score|relbias|t5|window) rc=$? t=$SECONDS $(grep -E '^TOTAL' "$O/suite.log")"
grep FAIL "$O/suite.log" | head -5
FA4JIT_LIBRARY=$D/libfa4jit.so.0 FA4JIT_CACHE_DIR=/tmp/s24-c1 timeout 150 python3 -m pytest -q tests/python/test_gpu.py \
    -k "alibi or head_scale or shipped_mod_twin" >"$O/pytest.log" 2>&1
echo "pytest rc=$? t=$SECONDS $(tail -1 "$O/pytest.log")"
grep -E "FAILED|Error" "$O/pytest.log" | head -5
echo "== 2. KFOLD A/B: fa4jit only, fwd and f+b ($(left) s left)"
timeout $(( $(left) - 200 )) python3 "$D/fa4_ab.py" --cases "plain_seqlen:S=4096,mods:ALiBi,mods:head_scale,mods:sliding_window_1024" \
    --variants "default,$D/k_kf0,$D/k_rs0" --rounds 2 --reps 20 --bwd 2>&1 | tee "$O/ab.log" | grep -v "^  "
grep -A20 "^summary" "$O/ab.log"
# ncu's per-instruction executed counts (source page, SASS): where a kernel's issue slots go
src() { # name kernel-regex skip filter
    [ "$(left)" -gt 60 ] || { echo "$1: no time left"; return; }
    FA4JIT_CACHE_DIR=/tmp/s24-c3 timeout 55 ncu --clock-control none --section SourceCounters --section InstructionStats \
        -k "regex:$2" --launch-skip "$3" --launch-count 1 -o "$O/$1" -f \
        "$D/test_gpu_sm80" --bench-only --filter "$4" >"$O/$1.ncu.log" 2>&1
    echo "ncu $1 rc=$? t=$SECONDS"; tail -2 "$O/$1.ncu.log"
    timeout 30 ncu -i "$O/$1.ncu-rep" --page source --csv --print-source sass >"$O/$1_sass.csv" 2>"$O/$1_src.err"
    echo "source page rc=$? $(wc -l <"$O/$1_sass.csv") lines"; head -c 400 "$O/$1_sass.csv"; echo; tail -2 "$O/$1_src.err"
    gzip -f "$O/$1_sass.csv"
}
echo "== 3. ncu source counters, T5 forward ($(left) s left)"
src t5fwd "fa4_sm90_fwd$" 2 "T5 bias (score_mod)"
echo "== 4. bench/run.py, the standing cases with the peers ($(left) s left)"
if [ "$(left)" -gt 120 ]; then
    timeout $(( $(left) - 5 )) python3 bench/run.py --paths sm90 --no-jit --no-launch --budget-s $(( $(left) - 100 )) --grace-s 25 \
        --cases "plain_seqlen:S=4096,causal_seqlen:S=4096,mods:ALiBi,mods:head_scale,mods:sliding_window_1024,headdim:D=64,headdim:D=256,mods:rel._bias_(trainable),mods:document" \
        --out "$O/run" >"$O/run.log" 2>&1
    echo "run.py rc=$? t=$SECONDS"
    grep -h "^|" "$O"/run/*.md 2>/dev/null | head -40
fi
echo "== 5. ncu source counters, D 64 backward ($(left) s left)"
src bwd64 "fa4_sm90_bwd_main" 0 "plain D=64 (B=8)"
echo "done at $SECONDS s"
