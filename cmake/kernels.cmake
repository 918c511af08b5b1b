# kernels.cmake - targets of the kernel area: the GPU test program of the sm80 path (tests/gpu).
# Plain C (no cmocka: the GPU machine has none); it skips with a reason where there is no GPU.
# Built with the library's internal include paths because it uses the driver table and the CPU
# evaluator of the mod front end for its float64 reference.
file(GLOB FA4_GPU_TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/gpu/*.c)
if(FA4_GPU_TEST_SOURCES)
  add_executable(test_gpu_sm80 ${FA4_GPU_TEST_SOURCES})
  target_include_directories(test_gpu_sm80 PRIVATE ${FA4_INTERNAL_INCLUDES} ${CMAKE_SOURCE_DIR}/tests/gpu)
  target_compile_options(test_gpu_sm80 PRIVATE ${FA4_WARNINGS})
  target_compile_definitions(test_gpu_sm80 PRIVATE _GNU_SOURCE)
  target_link_libraries(test_gpu_sm80 PRIVATE fa4jit_static m Threads::Threads)
endif()

# CTest (the suite itself is registered by the root CMakeLists.txt as test_gpu_sm80): a deviceless
# compile of every head dim and dtype with the heaviest test mod for sm_90a and sm_80 that fails on
# any spill or compiler warning (NVRTC needs no GPU, so CI checks the kernels' resource budget).
if(FA4JIT_BUILD_TESTS AND FA4_GPU_TEST_SOURCES)
  add_test(NAME gpu_sm80_no_spills_sm90a
           COMMAND test_gpu_sm80 --deviceless sm_90a --quick --filter alibi_causal)
  add_test(NAME gpu_sm80_no_spills_sm80
           COMMAND test_gpu_sm80 --deviceless sm_80 --quick --filter alibi_causal)
  set_tests_properties(gpu_sm80_no_spills_sm90a gpu_sm80_no_spills_sm80
                       PROPERTIES ENVIRONMENT "FA4JIT_CACHE_MODE=off" TIMEOUT 900)
endif()
