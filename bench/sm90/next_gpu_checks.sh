#!/bin/bash
# next_gpu_checks.sh - what session 23 left for the GPU (its device time ran out), in priority order
# within one call's budget (END_S, default 540 s of command time):
#   1. the full sm90 suite on the default build (FA4_SM90_DESC_ADD on by default since 6ac95be; only
#      the quick suite, 141 / 141, has run on it);
#   2. FA4_SM90_TILES_ONE_PER_BLOCK and FA4_SM90_MASK_FULL_SPLIT (on by default since session 23,
#      never run on a GPU: no division per key tile where a mask block holds one key tile; a checked
#      tile's mask split by `full` at the caller): block-masked forward A/B against k_tpb0 (both off);
#   2b. FA4_SM90_BWD256_DESC_ADD (the D 256 backward's descriptors, opt-in until measured): the D 256
#      suite cases with it, then D 256 backward A/B (kernel dir k_b256 against the default);
#   3. FA4_SM90_STASH_UNIFORM (on by default since session 23, never run on a GPU: the D 64
#      three-consumer forward's stash values broadcast): D 64 forward A/B against k_su0 (it off);
#   4. bench/run.py, full, with FlexAttention: the standing table on this build.
# On the GPU machine, from the repository root, after `bash scripts/device_carry.sh` here and
#   cp bench/sm90/next_gpu_checks.sh .devcarry/ && cp -r src/kernels .devcarry/k_b256 &&
#   sed -i '1i #define FA4_SM90_BWD256_DESC_ADD 1' .devcarry/k_b256/sm90/bwd256.cuh &&
#   cp -r src/kernels .devcarry/k_su0 && sed -i '1i #define FA4_SM90_STASH_UNIFORM 0' .devcarry/k_su0/sm90/mainloop.cuh &&
#   cp -r src/kernels .devcarry/k_tpb0 && sed -i '1i #define FA4_SM90_TILES_ONE_PER_BLOCK 0' .devcarry/k_tpb0/sm90/schedule.cuh &&
#   sed -i '1i #define FA4_SM90_MASK_FULL_SPLIT 0' .devcarry/k_tpb0/sm90/softmax.cuh
# then (device tool, carry [".devcarry", "build-bench-carry"]) `bash .devcarry/next_gpu_checks.sh`.
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FA4_TEST_PATH=sm90
OUT=${OUT:-/tmp/next-out}
END=${END_S:-540}
mkdir -p "$OUT"
left() { echo $((END - SECONDS)); }
# ab NAME KERNEL_DIR FILTER MIN_LEFT: two rounds, the default build then the kernel dir's, `--bench-only`
ab() {
    local name=$1 kdir=$2 filt=$3 min=$4 r v kd
    for r in 1 2; do
        for v in default variant; do
            [ "$(left)" -gt "$min" ] || return
            kd=""
            [ $v = variant ] && kd="FA4JIT_KERNEL_DIR=$kdir"
            echo "== round $r $name=$v"
            env $kd FA4JIT_CACHE_DIR=/tmp/nx-$name-$v timeout 40 "$D/test_gpu_sm80" --bench-only --filter "$filt" 2>&1 |
                grep BENCH | sed 's/  */ /g'
        done
    done
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader; date -u; echo "commit $(cat "$D/COMMIT")"
echo "== 1. full suite ($(left) s left)"
FA4JIT_CACHE_DIR=/tmp/nx-def timeout 200 "$D/test_gpu_sm80" --no-bench >"$OUT/suite.log" 2>&1
echo "full suite rc=$? t=$SECONDS $(grep -E '^TOTAL' "$OUT/suite.log")"
grep FAIL "$OUT/suite.log" | head -8
echo "== 2. one key tile a mask block, forward ($(left) s left)"
# the variant is the build before (both changes off)
ab block_mask_fwd "$D/k_tpb0" "causal (block|sliding window 1024 (bm)|document (bm)|prefix-LM (bm per batch)" 250
echo "== 2b. bwd256 descriptors ($(left) s left)"
if [ "$(left)" -gt 120 ]; then
    FA4JIT_KERNEL_DIR=$D/k_b256 FA4JIT_CACHE_DIR=/tmp/nx-b256 timeout 90 "$D/test_gpu_sm80" --no-bench --filter "d256" \
        >"$OUT/suite256.log" 2>&1
    echo "D 256 cases with FA4_SM90_BWD256_DESC_ADD 1: rc=$? $(grep -E '^TOTAL' "$OUT/suite256.log")"
    grep FAIL "$OUT/suite256.log" | head -5
    ab b256_desc_add "$D/k_b256" "D=256" 100
fi
echo "== 3. the stash broadcast, D 64 forward ($(left) s left)"
ab stash_uniform_off "$D/k_su0" "D=64" 200
echo "== 4. bench/run.py ($(left) s left)"
if [ "$(left)" -gt 150 ]; then
    timeout $(( $(left) - 5 )) python3 bench/run.py --paths sm90 --no-launch --budget-s $(( $(left) - 40 )) --grace-s 25 \
        --out "$OUT/run" >"$OUT/run.log" 2>&1
    echo "run.py rc=$? t=$SECONDS"
    grep -h "^|" "$OUT"/run/*.md 2>/dev/null | head -40
fi
echo "done at $SECONDS s"
