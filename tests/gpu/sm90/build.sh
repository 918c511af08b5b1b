#!/bin/sh
# build.sh - builds the sm90 GPU test programs with plain gcc against a cmake build of the library
# objects (default build-sm90, Release), for the GPU machine (no cmocka, no xxhash there):
#   test_gpu_sm90   tests/gpu/*.c (the sm80 suite) run against the sm90 path (FA4_SM90_AS_SM80=1)
#   bench_sm90      bench/sm90/bench_fwd.c, forward timings and knob effects
# Usage: tests/gpu/sm90/build.sh [build-dir]
set -e
root=$(cd "$(dirname "$0")/../../.." && pwd)
b=${1:-$root/build-sm90}
[ -f "$b/CMakeCache.txt" ] || cmake -S "$root" -B "$b" -DCMAKE_BUILD_TYPE=Release -DFA4JIT_BUILD_TESTS=OFF >/dev/null
cmake --build "$b" -j2 --target fa4jit_obj >/dev/null
o=$b/CMakeFiles/fa4jit_obj.dir
mkdir -p "$b/sm90"
# compile.c with fa4__path_for consulting the shim first
sh "$root/tests/gpu/sm90/patch_compile.sh" "$root/src/jit/compile.c" "$b/sm90/compile_shim.c"
objs=$(find "$o" -name '*.o' ! -name compile.c.o)
W="-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wundef -Wno-unused-parameter"
I="-I$root/include -I$root/src -I$root/src/jit -I$root/src/kernels/common -I/usr/local/cuda/include -I$root/tests/gpu"
CC="gcc -std=c11 -O2 -D_GNU_SOURCE $I"
$CC -fvisibility=hidden -c "$b/sm90/compile_shim.c" -o "$b/sm90/compile_shim.o" -I"$root/src/jit"
$CC $W -c "$root/tests/gpu/sm90/path_shim.c" -o "$b/sm90/path_shim.o"
LIBS="-L/usr/local/cuda/lib64 -lnvrtc -lffi -lpthread -ldl -lm"
$CC $W -o "$b/sm90/test_gpu_sm90" "$root"/tests/gpu/*.c \
    "$b/sm90/compile_shim.o" "$b/sm90/path_shim.o" $objs $LIBS
$CC $W -o "$b/sm90/bench_sm90" "$root/bench/sm90/bench_fwd.c" "$root/tests/gpu/ref.c" \
    "$b/sm90/compile_shim.o" "$b/sm90/path_shim.o" $objs $LIBS
echo "built $b/sm90/test_gpu_sm90 $b/sm90/bench_sm90"
