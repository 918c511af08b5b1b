# sm90.cmake - targets of the Hopper path's tests (owner: the sm90 area).
#   test_gpu_sm90  the portable path's GPU suite (tests/gpu/test_sm80.c, ref.c) run against the sm90
#                  path: run it with FA4_SM90_AS_SM80=1
#   bench_sm90     forward timings against the sm80 path, knob effects; --compile-only checks every
#                  forward variant's NVRTC resource report (spills, C7520) without a GPU
# Both link a private static copy of the library whose compile.c is patched (patch_compile.sh) so
# that the path shim can route FA4_PATH_SM80/SM90 to the sm90 ops. Plain C, no cmocka.
set(FA4_SM90_SHIM_C ${CMAKE_BINARY_DIR}/sm90/compile_shim.c)
add_custom_command(
  OUTPUT ${FA4_SM90_SHIM_C}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/sm90
  COMMAND sh ${CMAKE_SOURCE_DIR}/tests/gpu/sm90/patch_compile.sh ${CMAKE_SOURCE_DIR}/src/jit/compile.c
          ${FA4_SM90_SHIM_C}
  DEPENDS ${CMAKE_SOURCE_DIR}/src/jit/compile.c ${CMAKE_SOURCE_DIR}/tests/gpu/sm90/patch_compile.sh
  COMMENT "sm90 tests: compile.c with the path shim")
set(FA4_SM90_LIB_SOURCES ${FA4_LIB_SOURCES})
list(REMOVE_ITEM FA4_SM90_LIB_SOURCES ${CMAKE_SOURCE_DIR}/src/jit/compile.c)
add_library(fa4jit_sm90_shim STATIC ${FA4_SM90_LIB_SOURCES} ${FA4_EMBED_C} ${FA4_SM90_SHIM_C}
            ${CMAKE_SOURCE_DIR}/tests/gpu/sm90/path_shim.c)
target_include_directories(fa4jit_sm90_shim PUBLIC ${CMAKE_SOURCE_DIR}/include
                           PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/src/jit
                                   ${CMAKE_SOURCE_DIR}/src/kernels/common)
target_include_directories(fa4jit_sm90_shim SYSTEM PRIVATE ${CUDAToolkit_INCLUDE_DIRS} ${XXHASH_INCLUDE_DIRS})
target_compile_definitions(fa4jit_sm90_shim PRIVATE _GNU_SOURCE
    FA4_SOURCE_KERNEL_DIR="${CMAKE_SOURCE_DIR}/src/kernels"
    $<$<BOOL:${FA4JIT_KERNELS_FROM_SOURCE}>:FA4_KERNELS_FROM_SOURCE=1>)
target_link_libraries(fa4jit_sm90_shim PUBLIC CUDA::nvrtc PkgConfig::FFI Threads::Threads ${CMAKE_DL_LIBS} m)

file(GLOB FA4_SM90_GPU_TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/gpu/*.c)
add_executable(test_gpu_sm90 ${FA4_SM90_GPU_TEST_SOURCES})
add_executable(bench_sm90 ${CMAKE_SOURCE_DIR}/bench/sm90/bench_fwd.c ${CMAKE_SOURCE_DIR}/tests/gpu/ref.c)
foreach(t test_gpu_sm90 bench_sm90)
  target_include_directories(${t} PRIVATE ${FA4_INTERNAL_INCLUDES} ${CMAKE_SOURCE_DIR}/tests/gpu)
  target_compile_options(${t} PRIVATE ${FA4_WARNINGS})
  target_compile_definitions(${t} PRIVATE _GNU_SOURCE)
  target_link_libraries(${t} PRIVATE fa4jit_sm90_shim)
endforeach()

# ctest: the NVRTC resource check of 6 forwards (bf16, D 64/128, 3 mods; no GPU needed, about 15 s
# here; a spill or C7520 fails),
# and the GPU suite against the sm90 path (skips where there is no GPU).
if(FA4JIT_BUILD_TESTS)
  add_test(NAME sm90_resources COMMAND bench_sm90 --compile-quick)
  add_test(NAME test_gpu_sm90 COMMAND test_gpu_sm90 --quick)
  set_tests_properties(sm90_resources test_gpu_sm90 PROPERTIES TIMEOUT 900)
  set_tests_properties(test_gpu_sm90 PROPERTIES ENVIRONMENT "FA4_SM90_AS_SM80=1;FA4JIT_CACHE_MODE=off")
endif()
