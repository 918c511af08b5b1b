#!/bin/bash
# desc_add_ab.sh - GPU check of FA4_SM90_DESC_ADD (session 23: wgmma descriptors made once per stage,
# the consumer warpgroup index made warp-uniform; ptx90.cuh): correctness of the new default
# (the quick sm90 suite), then A/B against a kernel dir with FA4_SM90_DESC_ADD 0 (the build before),
# alternated, `--bench-only`, and bench/run.py's plain and causal beside cuDNN, if time is left.
# On the GPU machine, from the repository root, after `bash scripts/device_carry.sh` here and
#   cp bench/sm90/desc_add_ab.sh .devcarry/ && cp -r src/kernels .devcarry/k_off &&
#   sed -i '1i #define FA4_SM90_DESC_ADD 0' .devcarry/k_off/sm90/ptx90.cuh
# (device tool, carry [".devcarry", "build-bench-carry"]): bash .devcarry/desc_add_ab.sh
# Budget END_S (default 280 s).
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FA4_TEST_PATH=sm90
END=${END_S:-280}
OUT=${OUT:-/tmp/da-out}
mkdir -p "$OUT"
left() { echo $((END - SECONDS)); }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader; date -u; echo "commit $(cat "$D/COMMIT")"
FA4JIT_CACHE_DIR=/tmp/da-on timeout 100 "$D/test_gpu_sm80" --no-bench --quick >"$OUT/quick.log" 2>&1
echo "quick (DESC_ADD on) rc=$? t=$SECONDS $(grep -E '^TOTAL' "$OUT/quick.log")"
grep FAIL "$OUT/quick.log" | head -5
F="plain|causal (block|ALiBi|GQA 32:4 causal (bm)|document (bm)|T5"
for r in 1 2; do
    for v in on off; do
        [ "$(left)" -gt 45 ] || break
        if [ $v = off ]; then kd="FA4JIT_KERNEL_DIR=$D/k_off"; else kd=""; fi
        echo "== round $r desc_add=$v t=$SECONDS"
        env $kd FA4JIT_CACHE_DIR=/tmp/da-$v timeout 60 "$D/test_gpu_sm80" --bench-only --filter "$F" 2>&1 | grep BENCH | sed 's/  */ /g; s/ (fwd dynamic)//'
    done
done
if [ "$(left)" -gt 70 ]; then
    echo "== bench/run.py plain and causal, cuDNN beside (t=$SECONDS)"
    timeout $(( $(left) - 5 )) python3 bench/run.py --paths sm90 --cases "plain_seqlen:S=4096,causal_seqlen:S=4096" \
        --no-launch --no-jit --budget-s $(( $(left) - 30 )) --grace-s 15 --out "$OUT/run" --stem desc-add >"$OUT/run.log" 2>&1
    echo "run.py rc=$? t=$SECONDS"
    grep -h "^|" "$OUT"/run/*.md 2>/dev/null | head -24
fi
echo "done at $SECONDS s"
