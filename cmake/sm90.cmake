# sm90.cmake - tests and tools of the Hopper path.
#   test_gpu_sm90        the GPU suite (tests/gpu, the same binary as test_gpu_sm80) run against the
#                        sm90 path with FA4_TEST_PATH=sm90; skips where there is no GPU
#   sm90_no_spills       deviceless NVRTC compile of the sm90 forwards (every head dim and dtype,
#                        heaviest test mod) that fails on any spill or compiler warning
#   bench_sm90 (tool)    forward timings and schedule A/B; built on demand only
#                        (cmake --build B --target bench_sm90): it links a copy of the library whose
#                        compile.c is patched so that FA4_SM90_EXTRA / FA4_SM90_CTAS can change the
#                        sm90 programs (see tests/gpu/sm90/path_shim.c). Never part of the library.
if(FA4JIT_BUILD_TESTS AND TARGET test_gpu_sm80)
  add_test(NAME test_gpu_sm90 COMMAND test_gpu_sm80 --quick)
  add_test(NAME sm90_no_spills COMMAND test_gpu_sm80 --deviceless sm_90a --quick --filter alibi_causal)
  set_tests_properties(test_gpu_sm90 sm90_no_spills PROPERTIES
                       ENVIRONMENT "FA4_TEST_PATH=sm90;FA4JIT_CACHE_MODE=off" TIMEOUT 900)
endif()

set(FA4_SM90_SHIM_C ${CMAKE_BINARY_DIR}/sm90/compile_shim.c)
add_custom_command(
  OUTPUT ${FA4_SM90_SHIM_C}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/sm90
  COMMAND sh ${CMAKE_SOURCE_DIR}/tests/gpu/sm90/patch_compile.sh ${CMAKE_SOURCE_DIR}/src/jit/compile.c
          ${FA4_SM90_SHIM_C}
  DEPENDS ${CMAKE_SOURCE_DIR}/src/jit/compile.c ${CMAKE_SOURCE_DIR}/tests/gpu/sm90/patch_compile.sh
  COMMENT "bench_sm90: compile.c with the path shim")
set(FA4_SM90_LIB_SOURCES ${FA4_LIB_SOURCES})
list(REMOVE_ITEM FA4_SM90_LIB_SOURCES ${CMAKE_SOURCE_DIR}/src/jit/compile.c)
add_library(fa4jit_sm90_shim STATIC EXCLUDE_FROM_ALL ${FA4_SM90_LIB_SOURCES} ${FA4_EMBED_C}
            ${FA4_SM90_SHIM_C} ${CMAKE_SOURCE_DIR}/tests/gpu/sm90/path_shim.c)
target_include_directories(fa4jit_sm90_shim PUBLIC ${CMAKE_SOURCE_DIR}/include
                           PRIVATE ${FA4_INTERNAL_INCLUDES})
target_include_directories(fa4jit_sm90_shim SYSTEM PRIVATE ${XXHASH_INCLUDE_DIRS})
target_compile_definitions(fa4jit_sm90_shim PRIVATE _GNU_SOURCE
    FA4_SOURCE_KERNEL_DIR="${CMAKE_SOURCE_DIR}/src/kernels")
target_link_libraries(fa4jit_sm90_shim PUBLIC ${FA4_NVRTC_LIB} PkgConfig::FFI Threads::Threads
                      ${CMAKE_DL_LIBS} m)
add_executable(bench_sm90 EXCLUDE_FROM_ALL ${CMAKE_SOURCE_DIR}/bench/sm90/bench_fwd.c
               ${CMAKE_SOURCE_DIR}/tests/gpu/ref.c)
target_include_directories(bench_sm90 PRIVATE ${FA4_INTERNAL_INCLUDES} ${CMAKE_SOURCE_DIR}/tests/gpu)
target_compile_options(bench_sm90 PRIVATE ${FA4_WARNINGS})
target_compile_definitions(bench_sm90 PRIVATE _GNU_SOURCE)
target_link_libraries(bench_sm90 PRIVATE fa4jit_sm90_shim)
