#!/bin/bash
# ncu_stalls_vs_cudnn.sh - where the issue slots go in fa4jit's sm90 kernels and in cuDNN's, side by
# side (bench/sm90/ncu_bwd_vs_cudnn.sh gave launch shape and speed of light only: cuDNN's backward
# main ran 5% faster on plain at 11% more instructions, IPC 1.47 against 1.25). One ncu capture
# per (kernel, case), B4 H16 S4096 D128 bf16, plain and causal, forward and backward main: duration,
# instructions, issue activity, the stall reasons per issued instruction, pipe use. All captures go
# to one CSV ($OUT/ncu_stalls/all.csv) and a side-by-side table to stdout (ncu_stalls_table.py).
# On the GPU machine, from the repository root, after `bash scripts/device_carry.sh` here and
#   cp bench/sm90/{ncu_stalls_vs_cudnn.sh,ncu_stalls_table.py,cudnn_bwd_once.py} .devcarry/
# then (device tool, carry [".devcarry", "build-bench-carry"]) `bash .devcarry/ncu_stalls_vs_cudnn.sh`.
# Budget: END_S (default 300 s of command time); each capture has its own timeout.
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FA4_TEST_PATH=sm90 FA4JIT_CACHE_DIR=/tmp/fa4jit-ncu-cache
O=${OUT:-/tmp/ncu-out}/ncu_stalls
mkdir -p "$O"
END=${END_S:-300}
T=${NCU_TIMEOUT:-60}
M="gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active"
M="$M,smsp__warps_active.avg.per_cycle_active,sm__cycles_active.avg,dram__throughput.avg.pct_of_peak_sustained_elapsed"
M="$M,regex:smsp__average_warps_issue_stalled_[a-z_]+_per_issue_active\.ratio"
M="$M,regex:sm__inst_executed_pipe_[a-z_]+\.avg\.pct_of_peak_sustained_active"
M="$M,regex:sm__pipe_[a-z_]+_cycles_active\.avg\.pct_of_peak_sustained_active"
: >"$O/all.csv"
cap() { # name, kernel regex, skip, command...
    local name=$1 k=$2 skip=$3
    shift 3
    [ $((END - SECONDS)) -gt 20 ] || { echo "$name: no time left"; return; }
    timeout $T ncu --csv --metrics "$M" -k "regex:$k" --launch-skip "$skip" --launch-count 1 "$@" >"$O/$name.raw" 2>&1
    echo "$name rc=$? t=$SECONDS"
    grep '^"' "$O/$name.raw" | sed "s/^/\"$name\",/" >>"$O/all.csv"
}
for m in plain causal; do
    f="plain"; [ $m = causal ] && f="causal (block"
    cap "fa4_bwd_$m" "fa4_sm90_bwd_main" 0 "$D/test_gpu_sm80" --bench-only --filter "$f"
    cap "cudnn_bwd_$m" "bprop" 1 python3 "$D/cudnn_bwd_once.py" $m
    cap "fa4_fwd_$m" "fa4_sm90_fwd$" 2 "$D/test_gpu_sm80" --bench-only --filter "$f"
    cap "cudnn_fwd_$m" "fprop" 1 python3 "$D/cudnn_bwd_once.py" $m
done
python3 "$D/ncu_stalls_table.py" "$O/all.csv"
