#!/bin/sh
# device_run.sh STAGE... - what one call of the GPU machine runs for the sm90 path (binaries from
# build.sh carried in build-sm90/sm90; logs under $OUT). Each step has its own time limit so a hung
# kernel costs at most that step.
#   sass   SASS check of the carried cubins (HGMMA present, no local memory)
#   test   the sm80 GPU suite against the sm90 path (--quick, no bench)
#   bench  benchmark shape (bf16 B=4 H=16 S=4096 D=128) against sm80, then A/B of the persistent
#          grid (FA4_SM90_CTAS=0) and of 2 K/V stages, then D=64 (B=8) and D=256
#   dims   plain and causal at D=128, D=64 (B=8) and D=256, sm90 only
#   knobs  the knob variants (rescale threshold, software exp2)
#   fwd3   issue 8 in one short call: D=64 (B=8) and D=128 plain / causal with the built-in
#          kernels against the base ones (BASE_KERNELS: a kernel-source tree, via FA4JIT_KERNEL_DIR)
#          and against FA4_SM90_EXTRA (default -DFA4_SM90_CONSUMERS=2); sm90 against sm80 at D=64
#          S=1000; the checked-build trap test on both paths; then the quick suite on the sm90 path
# B (default build-sm90/sm90) names the folder of the carried binaries.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH
B=${B:-build-sm90/sm90}
O=${OUT:-/tmp}
main="=plain,=causal (block mask),=alibi,=softcap,=window 1024 (block mask)"
for st in "$@"; do
case $st in
sass)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $O/smi.txt 2>&1
    for f in $B/cubin/*.cubin; do
        echo "$f HGMMA $(cuobjdump -sass $f | grep -c HGMMA) LDL/STL $(cuobjdump -sass $f | grep -cE 'LDL|STL')"
    done > $O/sass.txt 2>&1
    cat $O/sass.txt
    ;;
test)
    FA4_SM90_AS_SM80=1 timeout ${TEST_LIMIT:-150} $B/test_gpu_sm90 --quick --no-bench > $O/test.txt 2>&1
    echo "rc=$?" >> $O/test.txt
    grep -v "PASS" $O/test.txt | tail -45
    ;;
bench)
    timeout 90 $B/bench_sm90 --filter "$main" > $O/bench.txt 2>&1
    echo "== one CTA per tile (FA4_SM90_CTAS=0)" >> $O/bench.txt
    FA4_SM90_CTAS=0 timeout 40 $B/bench_sm90 --no-ref --filter "=plain,=causal (block mask)" >> $O/bench.txt 2>&1
    echo "== 2 stages" >> $O/bench.txt
    FA4_SM90_EXTRA="-DFA4_SM90_STAGES=2" timeout 40 $B/bench_sm90 --no-ref --filter "=plain,=causal (block mask)" >> $O/bench.txt 2>&1
    echo "== D=64 B=8" >> $O/bench.txt
    timeout 40 $B/bench_sm90 --no-ref --d 64 --b 8 --filter "=plain,=causal (block mask)" >> $O/bench.txt 2>&1
    echo "== D=256" >> $O/bench.txt
    timeout 40 $B/bench_sm90 --no-ref --d 256 --filter "=plain,=causal (block mask)" >> $O/bench.txt 2>&1
    grep -v "^  compiled\|^[a-z].*:$" $O/bench.txt
    ;;
dims)
    for a in "--d 128" "--d 64 --b 8" "--d 256"; do
        echo "== $a" >> $O/dims.txt
        timeout 40 $B/bench_sm90 --no-ref $a --filter "=plain,=causal (block mask)" >> $O/dims.txt 2>&1
    done
    grep -v "^[a-z].*:$" $O/dims.txt
    ;;
fwd3)
    pc="=plain,=causal (block mask)"
    for a in "--d 64 --b 8" "--d 128 --b 4"; do
        echo "== $a now" >> $O/bench.txt
        timeout 25 $B/bench_sm90 --no-ref $a --filter "$pc" >> $O/bench.txt 2>&1
        echo "== $a base kernels" >> $O/bench.txt
        FA4JIT_KERNEL_DIR=$BASE_KERNELS timeout 25 $B/bench_sm90 --no-ref $a --filter "$pc" >> $O/bench.txt 2>&1
    done
    echo "== --d 64 --b 8 ${FWD3_EXTRA:--DFA4_SM90_CONSUMERS=2}" >> $O/bench.txt
    FA4_SM90_EXTRA="${FWD3_EXTRA:--DFA4_SM90_CONSUMERS=2}" timeout 25 $B/bench_sm90 --no-ref --d 64 --b 8 --filter "$pc" >> $O/bench.txt 2>&1
    echo "== --d 64 --b 2 --s 1000 against sm80" >> $O/bench.txt
    timeout 25 $B/bench_sm90 --d 64 --b 2 --s 1000 --filter "$pc" >> $O/bench.txt 2>&1
    grep -v "^[a-z].*:$" $O/bench.txt
    for path in sm90 sm80; do
        echo "== checked trap, $path" >> $O/trap.txt
        FA4_TEST_PATH=$path timeout 20 $B/test_gpu_sm90 --checked-trap >> $O/trap.txt 2>&1
        echo "rc=$?" >> $O/trap.txt
    done
    cat $O/trap.txt
    FA4_TEST_PATH=sm90 timeout ${TEST_LIMIT:-90} $B/test_gpu_sm90 --quick --no-bench > $O/test.txt 2>&1
    echo "rc=$?" >> $O/test.txt
    grep -v "PASS" $O/test.txt | tail -40
    ;;
knobs)
    timeout 60 $B/bench_sm90 --no-ref --filter "rescale,sw-exp2,=plain,=softcap" > $O/knobs.txt 2>&1
    grep -v "^  compiled\|^[a-z].*:$" $O/knobs.txt
    ;;
esac
done
