#!/bin/bash
# ncu_bwd_vs_cudnn.sh - the backward main kernel of fa4jit's sm90 path beside cuDNN's (the bprop
# kernel of PyTorch SDPA's cuDNN backend) under Nsight Compute, at B4 H16 S4096 D128 bf16, plain and
# causal: launch configuration, occupancy, speed of light, warp states, scheduler and pipe use. For
# the main kernel's remaining gap to cuDNN's (notes/sm90-bwd.md, sessions 21-22). On the GPU machine,
# from the repository root, after `bash scripts/device_carry.sh` here and
#   cp bench/sm90/ncu_bwd_vs_cudnn.sh bench/sm90/cudnn_bwd_once.py .devcarry/
# then (device tool, carry [".devcarry", "build-bench-carry"]) `bash .devcarry/ncu_bwd_vs_cudnn.sh`.
# Each capture has its own timeout; reports go to $OUT/ncu/*.txt, a digest to stdout.
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FA4_TEST_PATH=sm90 FA4JIT_CACHE_DIR=/tmp/fa4jit-ncu-cache
O=${OUT:-/tmp/ncu-out}/ncu
mkdir -p "$O"
SECTIONS="--section LaunchStats --section Occupancy --section SpeedOfLight --section WarpStateStats
 --section SchedulerStats --section ComputeWorkloadAnalysis --section InstructionStats"
T=${NCU_TIMEOUT:-90}
for m in plain causal; do
    f="plain"; [ $m = causal ] && f="causal (block"
    # ours: the first main-kernel launch of the first bench case the filter names (B4 H16 S4096)
    timeout $T ncu $SECTIONS -k regex:fa4_sm90_bwd_main --launch-count 1 \
        "$D/test_gpu_sm80" --bench-only --filter "$f" >"$O/fa4_$m.txt" 2>&1
    echo "fa4jit $m rc=$?"
    # cuDNN's: its second bprop launch (the first is a warm-up)
    timeout $T ncu $SECTIONS -k regex:bprop --launch-skip 1 --launch-count 1 \
        python3 "$D/cudnn_bwd_once.py" $m >"$O/cudnn_$m.txt" 2>&1
    echo "cudnn $m rc=$?"
done
# the digest: the lines that say what bounds each kernel
for f in "$O"/*.txt; do
    echo "== $(basename "$f")"
    grep -E "^  [a-z_]+.*\(|Block Size|Grid Size|Registers Per Thread|Shared Memory Configuration Size|Dynamic Shared|Theoretical Occupancy|Achieved Occupancy|Duration|Compute \(SM\) Throughput|Memory Throughput|SM Busy|Issue Slots Busy|Executed Ipc Active|No Eligible|Warp Cycles Per Issued|Stall|Executed Instructions  " "$f" | head -40
done
