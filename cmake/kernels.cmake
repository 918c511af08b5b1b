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
