# cache.cmake - build pieces owned by the kernel cache (src/cache): link options of its tests,
# the disk-hit benchmark, and the libFuzzer target for the entry reader (CACHE.md T13).
# Included by the root CMakeLists.txt after the tests are defined.

if(FA4JIT_BUILD_TESTS AND TARGET test_cache_entry)
  # T4 watches the largest allocation the reader makes: malloc and friends are wrapped.
  target_link_options(test_cache_entry PRIVATE
                      -Wl,--wrap=malloc -Wl,--wrap=calloc -Wl,--wrap=realloc)
endif()
if(FA4JIT_BUILD_TESTS AND TARGET test_cache_cli)
  # `fa4jit cache` runs in-process in its test; the command's other files are not needed.
  target_sources(test_cache_cli PRIVATE ${CMAKE_SOURCE_DIR}/src/cli/cmd_cache.c)
  target_include_directories(test_cache_cli PRIVATE ${CMAKE_SOURCE_DIR}/src/cli)
endif()
foreach(t test_cache_entry test_cache_store test_cache_evict test_cache_concurrency test_cache_hmac
          test_cache_cli)
  if(TARGET ${t})
    set_tests_properties(${t} PROPERTIES LABELS cache TIMEOUT 120)
  endif()
endforeach()

# Time of fa4__cache_get on a disk hit (release builds): `bench_cache_get [size] [iterations]`.
if(FA4JIT_BUILD_TESTS)
  add_executable(bench_cache_get EXCLUDE_FROM_ALL ${CMAKE_SOURCE_DIR}/tests/cache/bench_cache_get.c)
  target_include_directories(bench_cache_get PRIVATE ${FA4_INTERNAL_INCLUDES} ${CMAKE_SOURCE_DIR}/tests)
  target_compile_options(bench_cache_get PRIVATE ${FA4_WARNINGS} -Wno-missing-prototypes)
  target_compile_definitions(bench_cache_get PRIVATE _GNU_SOURCE)
  target_link_libraries(bench_cache_get PRIVATE fa4jit_static)
  # fa4_jit_compile to a loaded kernel on a disk hit and a memory hit (needs a GPU).
  add_executable(bench_cache_e2e EXCLUDE_FROM_ALL ${CMAKE_SOURCE_DIR}/tests/cache/bench_cache_e2e.c)
  target_compile_options(bench_cache_e2e PRIVATE ${FA4_WARNINGS})
  target_compile_definitions(bench_cache_e2e PRIVATE _GNU_SOURCE)
  target_link_libraries(bench_cache_e2e PRIVATE fa4jit_static)
endif()

# libFuzzer target for the entry reader: cmake -DFA4JIT_FUZZ=ON -DCMAKE_C_COMPILER=clang
# then ./fuzz_cache_entry -max_total_time=60 ${CMAKE_SOURCE_DIR}/tests/cache/golden
if(FA4JIT_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(WARNING "FA4JIT_FUZZ needs clang (CMAKE_C_COMPILER=clang); fuzz_cache_entry not built")
  else()
    add_executable(fuzz_cache_entry ${CMAKE_SOURCE_DIR}/fuzz/cache/fuzz_entry.c
                   ${CMAKE_SOURCE_DIR}/src/cache/entry.c ${CMAKE_SOURCE_DIR}/src/cache/sha256.c
                   ${CMAKE_SOURCE_DIR}/src/jit/hash.c)
    target_include_directories(fuzz_cache_entry PRIVATE ${CMAKE_SOURCE_DIR}/include
                               ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/src/jit)
    target_include_directories(fuzz_cache_entry SYSTEM PRIVATE ${XXHASH_INCLUDE_DIRS})
    target_compile_definitions(fuzz_cache_entry PRIVATE _GNU_SOURCE)
    target_compile_options(fuzz_cache_entry PRIVATE ${FA4_WARNINGS} -g -O1
                           -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
    target_link_options(fuzz_cache_entry PRIVATE -fsanitize=fuzzer,address,undefined)
    # a short smoke run in ctest, seeded with the golden files (copied: libFuzzer writes into
    # its corpus directory)
    file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz-cache-corpus)
    file(GLOB FA4_CACHE_GOLDEN ${CMAKE_SOURCE_DIR}/tests/cache/golden/*.fa4)
    file(COPY ${FA4_CACHE_GOLDEN} DESTINATION ${CMAKE_BINARY_DIR}/fuzz-cache-corpus)
    add_test(NAME fuzz_cache_entry_smoke
             COMMAND fuzz_cache_entry -runs=200000 -max_len=4096 ${CMAKE_BINARY_DIR}/fuzz-cache-corpus)
    set_tests_properties(fuzz_cache_entry_smoke PROPERTIES LABELS cache TIMEOUT 120)
  endif()
endif()
