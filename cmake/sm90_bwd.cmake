# sm90_bwd.cmake - the deviceless compile checks of the sm90 backward main program
# (src/kernels/sm90/bwd_main.cu; see notes/sm90-bwd.md):
#   sm90_bwd_compile   compiles fa4_sm90_bwd_main for sm_90a with NVRTC through the library's
#                      machinery (embedded kernel sources, the mod front end's fa4_mod.cuh, the
#                      options of compile.c) for D 64/128/256 (bwd256.cuh's kernel), bf16,
#                      plain/alibi/causal/softcap_causal/rel_bias, t5_bias (trainable); fails on any
#                      spill (but the frames listed in its known_frames: softcap_causal and trainable
#                      t5_bias at D 128, none allowed to grow), stack frame, serialized wgmma (C7520)
#                      or ptxas warning; skips (77)
#                      without NVRTC. bf16 only in CI (fp16 allocates alike; the CI run took 12
#                      minutes with both): `bwd_compile_check` without --filter checks fp16 too.
#   sm90_bwd_rel_shfl  the same for trainable t5_bias at D 128 with -DFA4_SM90_BWD_REL_SHFL=1 (the
#                      relative backward's shuffle form, opt-in).
#   sm90_bwd_fx        the same at D 128 with -DFA4_AUX_FX=1 (the deterministic mode's main with
#                      fixed-point aux gradients, bwd_main_fx.cu).
#   sm90_bwd80_heads_inner  the 80-query main's GQA program (bwd_main80s.cu, document) as
#                      -DFA4_SM90_BWD_GQA_PROG=1 (the heads-inner walk and the split-by-query-head
#                      epilogue), no fallback.
#   sm90_bwd80_dq_fused, sm90_bwd80s_dq_fused  the 80-query main (causal) and its GQA program
#                      (document) with -DFA4_SM90_BWD_DQ_FUSED_BUILD=1 (the opt-in fused dQ
#                      conversion, FA4JIT_SM90_BWD_DQ_FUSED=1), no fallback.
#   sm90_bwd80_persist_plain, sm90_bwd80_persist_causal  the 80-query program with
#                      -DFA4_SM90_BWD_PERSIST=1 (the opt-in persistent main, FA4JIT_SM90_BWD_PERSIST):
#                      its entry fa4_sm90_bwd_main_persist, spills held within a 64-byte frame.
#   sm90_bwd_int_window  trainable mods at D 128 with -DFA4_SM90_BWD_AUX_INT_WINDOW=0 (the float
#                      window of the default mode, kept for A/B since the integer one became the
#                      default in session 18).
#   sm90_all_mods_resources  every shipped mod and plain attention through the library and the
#                      fa4jit command (all programs, the spill fallback included; --gqa, so the
#                      GQA program bwd_main90m80s too, which plain attention must have), bf16 D 128:
#                      fails on any spill, stack frame or serialized wgmma (but for the bwd_main90
#                      frames listed in its KNOWN_SPILL_FRAME: head_scale, softcap, softcap_causal,
#                      none allowed to grow), or a forward kept at its slow last spill fallback
#                      level (-DFA4_SM90_OVERLAP=0).
#   sm90_all_mods_resources_d256  the same at D 256: the forward's overlapped loop, whose registers are
#                      tightest there (its spill fallback levels: path_sm90.c), and the bwd256
#                      backward (sm90/bwd256.cuh).
#   sm90_fwd64_consumers3  the FA4JIT_SM90_FWD64_CONSUMERS=3 forward at D 64 (tests/cli/fwd64_consumers3.py).
#   sm90_fwd_mask_roll  the FA4JIT_SM90_FWD_MASK_ROLL=4 forward of six mask mods: clean and smaller
#                      than the default (tests/cli/fwd_mask_roll.py).
#   sm90_optin_knobs   rel_bias's and t5_bias's forwards with FA4_SM90_FWD_TILE_RUN 0 (default 8)
#                      and FA4_SM90_RELT_FOLD 1 (opt-in) and backward mains with
#                      FA4_SM90_BWD_SPLIT_ADD 0 (default 2): clean, one build, and not the default
#                      cubins (tests/cli/optin_knobs.py).
# Included from CMakeLists.txt with include(... OPTIONAL).
if(FA4JIT_BUILD_TESTS)
  add_executable(bwd_compile_check ${CMAKE_SOURCE_DIR}/tests/gpu/sm90/bwd_compile_check.c)
  target_include_directories(bwd_compile_check PRIVATE ${FA4_INTERNAL_INCLUDES})
  target_compile_options(bwd_compile_check PRIVATE ${FA4_WARNINGS})
  target_compile_definitions(bwd_compile_check PRIVATE _GNU_SOURCE
                             FA4_TEST_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  target_link_libraries(bwd_compile_check PRIVATE fa4jit_static)
  add_test(NAME sm90_bwd_compile COMMAND bwd_compile_check --filter bf16)
  set_tests_properties(sm90_bwd_compile PROPERTIES COST 55) # seconds: one of the longest, started early
  # the opt-in shuffle form of the relative backward (bwd_consumer.cuh, off by default until it
  # has run on a GPU) keeps compiling clean
  add_test(NAME sm90_bwd_rel_shfl COMMAND bwd_compile_check --mod t5_bias --filter "d128 bf16"
           -DFA4_SM90_BWD_REL_SHFL=1)
  set_tests_properties(sm90_bwd_rel_shfl PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                       ENVIRONMENT "CUDA_CACHE_DISABLE=1;FA4JIT_CACHE_MODE=off")
  # the deterministic mode's main with fixed-point aux gradients (bwd_main_fx.cu, FA4_AUX_FX; the
  # launcher's bwd_main90fx program) compiles clean for every mod of the check at D 128
  # the default mode's float window (FA4_SM90_BWD_AUX_INT_WINDOW=0, the A/B form; the integer
  # window is the default and sm90_bwd_compile checks it)
  add_test(NAME sm90_bwd_fx COMMAND bwd_compile_check --filter "d128 bf16" -DFA4_AUX_FX=1)
  # the 80-query main's GQA program (FA4_SM90_BWD_GQA_PROG: heads-inner walk, split epilogue)
  add_test(NAME sm90_bwd80_heads_inner COMMAND bwd_compile_check --main80 --mod document --filter "d128 bf16"
           -DFA4_SM90_BWD_GQA_PROG=1)
  set_tests_properties(sm90_bwd80_heads_inner PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                       ENVIRONMENT "CUDA_CACHE_DISABLE=1;FA4JIT_CACHE_MODE=off")
  # the opt-in fused dQ conversion (FA4JIT_SM90_BWD_DQ_FUSED=1: FA4_SM90_BWD_DQ_FUSED_BUILD) in the
  # 80-query main and its GQA program
  add_test(NAME sm90_bwd80_dq_fused COMMAND bwd_compile_check --main80 --mod causal --filter "d128 bf16"
           -DFA4_SM90_BWD_DQ_FUSED_BUILD=1)
  add_test(NAME sm90_bwd80s_dq_fused COMMAND bwd_compile_check --main80 --mod document --filter "d128 bf16"
           -DFA4_SM90_BWD_GQA_PROG=1 -DFA4_SM90_BWD_DQ_FUSED_BUILD=1)
  set_tests_properties(sm90_bwd80_dq_fused sm90_bwd80s_dq_fused PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                       ENVIRONMENT "CUDA_CACHE_DISABLE=1;FA4JIT_CACHE_MODE=off")
  # the opt-in persistent 80-query main (FA4JIT_SM90_BWD_PERSIST: FA4_SM90_BWD_PERSIST, its own
  # entry function beside the normal one): clean but for its known spills (session 35: 40-48-byte
  # frame, 48-52 / 52-60 bytes; its producer's 24 registers), held under 64 bytes
  foreach(m plain causal)
    add_test(NAME sm90_bwd80_persist_${m} COMMAND bwd_compile_check --main80 --mod ${m} --filter "d128 bf16"
             --function fa4_sm90_bwd_main_persist --frame-tolerance 64 -DFA4_SM90_BWD_PERSIST=1)
    set_tests_properties(sm90_bwd80_persist_${m} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                         ENVIRONMENT "CUDA_CACHE_DISABLE=1;FA4JIT_CACHE_MODE=off")
  endforeach()
  add_test(NAME sm90_bwd_int_window COMMAND bwd_compile_check --filter "(trainable) d128 bf16"
           -DFA4_SM90_BWD_AUX_INT_WINDOW=0)
  set_tests_properties(sm90_bwd_fx sm90_bwd_int_window PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                       ENVIRONMENT "CUDA_CACHE_DISABLE=1;FA4JIT_CACHE_MODE=off")
  set_tests_properties(sm90_bwd_compile PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900
                       ENVIRONMENT "CUDA_CACHE_DISABLE=1;FA4JIT_CACHE_MODE=off")
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND AND TARGET fa4jit_cli)
    add_test(NAME sm90_all_mods_resources
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/cli/all_mods_resources.py
                     $<TARGET_FILE:fa4jit_cli> sm_90a sm90 --gqa)
    add_test(NAME sm90_all_mods_resources_d256
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/cli/all_mods_resources.py
                     $<TARGET_FILE:fa4jit_cli> sm_90a sm90 --head-dim 256)
    add_test(NAME sm90_fwd64_consumers3
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/cli/fwd64_consumers3.py
                     $<TARGET_FILE:fa4jit_cli>)
    # the opt-in rolled mask of the forward (FA4JIT_SM90_FWD_MASK_ROLL): builds clean and smaller
    add_test(NAME sm90_fwd_mask_roll
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/cli/fwd_mask_roll.py
                     $<TARGET_FILE:fa4jit_cli>)
    # session 25's opt-in knobs (FA4_SM90_FWD_TILE_RUN, FA4_SM90_RELT_FOLD, FA4_SM90_BWD_SPLIT_ADD): build clean and reach the code
    add_test(NAME sm90_optin_knobs
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/cli/optin_knobs.py
                     $<TARGET_FILE:fa4jit_cli>)
    set_tests_properties(sm90_all_mods_resources sm90_all_mods_resources_d256 sm90_fwd64_consumers3
                         sm90_fwd_mask_roll sm90_optin_knobs PROPERTIES
                         SKIP_RETURN_CODE 77 TIMEOUT 900)
    # the longest tests first (ctest starts higher COSTs first where it has no timings of its own,
    # as in CI's clean clone): in declaration order they came last and a clean clone's ctest ended
    # on one of them with the other core idle (2 cores, 2026-12-07: 827 s for 1425 s of tests).
    # COST: seconds on that machine in a clean clone's ctest -j2 with the NVRTC memo and its
    # unsanitized helper (CMakeLists.txt; 484 s for 965 s of tests)
    set_tests_properties(sm90_all_mods_resources PROPERTIES COST 165)
    set_tests_properties(sm90_all_mods_resources_d256 PROPERTIES COST 150)
    set_tests_properties(sm90_optin_knobs PROPERTIES COST 145)
  endif()
endif()
