# device_env.sh - the preamble of bench/sm90's device scripts, sourced once D (the script's folder,
# .devcarry/ on the GPU machine) is set: the carried library and CUDA on the loader path, the sm90
# path, O (the results folder: $OUT, which the device tool returns), END (seconds of command time:
# END_S, else END_DEFAULT, else 560), left() (seconds left of END), and a header line (GPU, clocks,
# date, the carried build's commit). Copy it to .devcarry/ beside the script.
export LD_LIBRARY_PATH=$D:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FA4_TEST_PATH=sm90
O=${OUT:-/tmp/fa4-device-out}
END=${END_S:-${END_DEFAULT:-560}}
mkdir -p "$O"
left() { echo $((END - SECONDS)); }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader; date -u; echo "commit $(cat "$D/COMMIT")"
