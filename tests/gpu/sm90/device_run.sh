#!/bin/sh
# device_run.sh STAGE - what one call of the GPU machine runs for the sm90 path (binaries from
# build.sh carried in build-sm90/sm90; logs under $OUT). Each step has its own time limit so a hung
# kernel costs at most that step.
#   smoke  small-shape forward vs sm80, both schedules; SASS check of the carried cubins
#   test   the sm80 GPU suite against the sm90 path (--quick, no bench)
#   bench  benchmark shape: schedules, plain/causal/mods, knobs
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH
B=build-sm90/sm90
O=${OUT:-/tmp}
for st in "$@"; do
case $st in
smoke)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $O/smi.txt 2>&1
    for f in $B/cubin/*.cubin; do
        echo "$f HGMMA $(cuobjdump -sass $f | grep -c HGMMA) LDL/STL $(cuobjdump -sass $f | grep -cE 'LDL|STL')"
    done > $O/sass.txt 2>&1
    cat $O/sass.txt
    timeout 40 $B/bench_sm90 --s 300 --b 2 --h 4 --filter plain > $O/smoke.txt 2>&1
    echo "rc=$?" >> $O/smoke.txt
    FA4_SM90_EXTRA="-DFA4_SM90_OVERLAP=0" timeout 30 $B/bench_sm90 --s 300 --b 2 --h 4 --filter causal >> $O/smoke.txt 2>&1
    echo "rc=$?" >> $O/smoke.txt
    timeout 30 $B/bench_sm90 --s 300 --b 2 --h 4 --filter causal >> $O/smoke.txt 2>&1
    echo "rc=$?" >> $O/smoke.txt
    grep -v "^  compiled" $O/smoke.txt
    ;;
test)
    FA4_SM90_AS_SM80=1 timeout ${TEST_LIMIT:-150} $B/test_gpu_sm90 --quick --no-bench > $O/test.txt 2>&1
    echo "rc=$?" >> $O/test.txt
    grep -v "^ *ok\b" $O/test.txt | tail -60
    ;;
bench)
    timeout 100 $B/bench_sm90 > $O/bench.txt 2>&1
    for e in "-DFA4_SM90_OVERLAP=0" "-DFA4_SM90_PINGPONG=0"; do
        echo "== FA4_SM90_EXTRA=$e" >> $O/bench.txt
        FA4_SM90_EXTRA="$e" timeout 40 $B/bench_sm90 --no-ref --filter plain >> $O/bench.txt 2>&1
    done
    grep -v "^  compiled" $O/bench.txt
    ;;
esac
done
