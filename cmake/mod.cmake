# mod.cmake - build pieces owned by the mod front end (src/jit/mod): the libFuzzer target and the
# check of fa4_tanhf's derived coefficients.
#
# -DFA4JIT_FUZZ=ON with clang (-DCMAKE_C_COMPILER=clang) builds `fuzz_mod`, the front end compiled
# with -fsanitize=fuzzer,address,undefined, and registers a short smoke run over the corpus as the
# ctest `fuzz_mod_smoke`. Longer runs by hand:
#   ./fuzz_mod -max_total_time=600 -dict=... <writable-dir> ${CMAKE_SOURCE_DIR}/fuzz/mod/corpus
if(FA4JIT_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(WARNING "FA4JIT_FUZZ needs clang (configure with -DCMAKE_C_COMPILER=clang); "
                    "fuzz_mod is not built")
  else()
    file(GLOB FA4_MOD_FUZZ_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/jit/mod/*.c)
    add_executable(fuzz_mod ${CMAKE_SOURCE_DIR}/fuzz/mod/fuzz_mod.c ${FA4_MOD_FUZZ_SOURCES}
                            ${CMAKE_SOURCE_DIR}/src/jit/hash.c)
    target_include_directories(fuzz_mod PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src
                               ${CMAKE_SOURCE_DIR}/src/jit ${CMAKE_SOURCE_DIR}/tests)
    target_include_directories(fuzz_mod SYSTEM PRIVATE ${XXHASH_INCLUDE_DIRS})
    target_compile_options(fuzz_mod PRIVATE ${FA4_WARNINGS} -g -O1
                           -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
    target_link_options(fuzz_mod PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(fuzz_mod PRIVATE m)
    if(FA4JIT_BUILD_TESTS)
      set(FA4_MOD_FUZZ_WORK ${CMAKE_BINARY_DIR}/fuzz_mod_corpus)
      file(MAKE_DIRECTORY ${FA4_MOD_FUZZ_WORK})
      add_test(NAME fuzz_mod_smoke
               COMMAND fuzz_mod -seed=1 -runs=20000 -max_len=4096 ${FA4_MOD_FUZZ_WORK}
                       ${CMAKE_SOURCE_DIR}/fuzz/mod/corpus)
      set_tests_properties(fuzz_mod_smoke PROPERTIES TIMEOUT 300)
    endif()
  endif()
endif()

# fa4_tanhf's coefficients in src/jit/mod/mathfn.h are the ones tests/mod/mathfn_tanh.py derives
# (mpmath); the test skips where python3 or mpmath is missing.
if(FA4JIT_BUILD_TESTS)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    add_test(NAME mod_mathfn_tanh_coefficients
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/mod/mathfn_tanh.py
                     --check ${CMAKE_SOURCE_DIR}/src/jit/mod/mathfn.h)
    set_tests_properties(mod_mathfn_tanh_coefficients PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
  endif()
endif()
