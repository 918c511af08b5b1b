#!/usr/bin/env bash
# device_ab.sh - a same-call A/B of two commits on the GPU machine: builds test_gpu_sm80 (the
# library is linked in statically) of each commit here, from `git archive` snapshots, into
# .devab/A and .devab/B (git-ignored), and writes .devab/run.sh for the device, which alternates
# the two builds' `--bench-only` rounds and prints the median TFLOP/s of each shape per build.
#   bash scripts/device_ab.sh REV_A REV_B
# then the device tool's run with carry [".devab"] and the command
#   bash .devab/run.sh [ROUNDS] [FILTER]      (defaults: 3 rounds, every bench shape)
# Environment passed through on the device: FA4_TEST_PATH (default sm90), FA4_BENCH_DETERMINISTIC.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: bash scripts/device_ab.sh REV_A REV_B" >&2; exit 2; }
out=.devab
rm -rf "$out" && mkdir -p "$out"
bash scripts/deps.sh >/dev/null
# awk reads to the end: an early exit would SIGPIPE ldconfig under pipefail
ffi=$(ldconfig -p | awk '/libffi\.so\.8 / && !f {print $NF; f = 1}')
[ -n "$ffi" ] || { echo "device_ab: libffi.so.8 not found on this machine" >&2; exit 1; }
cp -L "$ffi" "$out/libffi.so.8"
for side in A B; do
    rev=$([ "$side" = A ] && echo "$1" || echo "$2")
    commit=$(git rev-parse --short "$rev")
    snap=${FA4JIT_SNAPSHOT_DIR:-/tmp/fa4jit-devab}-$side
    rm -rf "$snap" && mkdir -p "$snap"
    git archive "$commit" | tar -x -C "$snap"
    cmake -S "$snap" -B "$snap/build" -DCMAKE_BUILD_TYPE=Release -DFA4JIT_BUILD_TESTS=ON >/dev/null
    cmake --build "$snap/build" -j"$(nproc)" --target test_gpu_sm80 >/dev/null
    mkdir -p "$out/$side"
    cp "$snap/build/test_gpu_sm80" "$out/$side/"
    echo "$commit" > "$out/$side/COMMIT"
done
cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# run.sh (written by scripts/device_ab.sh): alternate builds A and B, ROUNDS rounds of --bench-only
set -uo pipefail
cd "$(dirname "$0")"
rounds=${1:-3}
filter=()
[ -n "${2:-}" ] && filter=(--filter "$2")
export LD_LIBRARY_PATH=$PWD:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FA4_TEST_PATH=${FA4_TEST_PATH:-sm90}
log=${OUT:-.}/ab.log
: > "$log"
echo "A = $(cat A/COMMIT), B = $(cat B/COMMIT); $FA4_TEST_PATH path; $(date -u); $(nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader 2>/dev/null)"
for r in $(seq 1 "$rounds"); do
    for side in A B; do
        timeout 300 "$side/test_gpu_sm80" --bench-only "${filter[@]}" 2>&1 | grep '^BENCH' | sed "s/^/$side /" >> "$log"
    done
done
python3 - "$log" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\w) BENCH (.+?)\s+B=.*fwd\s+[\d.]+ ms\s+([\d.]+) TFLOP/s \| bwd\s+[\d.]+ ms\s+([\d.]+) TFLOP/s \| fwd\+bwd\s+([\d.]+)", line)
    if m:
        rows.setdefault(m.group(2), {}).setdefault(m.group(1), []).append(tuple(map(float, m.group(3, 4, 5))))
print(f"{'shape':34s} {'fwd A':>7s} {'fwd B':>7s} {'B/A':>6s}   {'bwd A':>7s} {'bwd B':>7s} {'B/A':>6s}   runs")
for shape, d in rows.items():
    a, b = d.get("A", []), d.get("B", [])
    if not a or not b:
        continue
    med = lambda v, i: statistics.median(x[i] for x in v)
    fa, fb, ba, bb = med(a, 0), med(b, 0), med(a, 1), med(b, 1)
    print(f"{shape:34s} {fa:7.1f} {fb:7.1f} {fb / fa:6.3f}   {ba:7.1f} {bb:7.1f} {bb / ba:6.3f}   {len(a)}/{len(b)}")
PY
RUN
chmod +x "$out/run.sh"
echo "device_ab: A $(cat $out/A/COMMIT), B $(cat $out/B/COMMIT) -> $out/ ($(du -sh $out | cut -f1)); on the device: bash .devab/run.sh [ROUNDS] [FILTER]"
