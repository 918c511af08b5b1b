/*
 * config.cuh - tile geometry of the sm80 path, in one place with the checks that keep it legal.
 * Forward: 128 query rows per CTA; heads up to kFwdMaxTwoBlockDim (now none): 4 warps of 32 rows,
 * 32 keys per step; others: 8 warps of 16 rows, 64 keys per step (32 for Dv 256).
 * Backward: 64 keys (the stationary block) x 64 queries per step, 8 warps as a 4 x 2 grid.
 * Shared-memory rows are padded by 8 elements (16 bytes) so ldmatrix rows fall in distinct banks.
 * The host launcher (src/jit/path_sm80.c) mirrors these numbers; keep both in step.
 */
#ifndef FA4_SM80_CONFIG_CUH
#define FA4_SM80_CONFIG_CUH

#ifndef FA4_HEAD_DIM
#error "FA4_HEAD_DIM must be defined by the pipeline"
#endif
#ifndef FA4_HEAD_DIM_V
#define FA4_HEAD_DIM_V FA4_HEAD_DIM
#endif

constexpr int kD = FA4_HEAD_DIM;
constexpr int kDv = FA4_HEAD_DIM_V;
constexpr int kPad = 8;
constexpr int kLdQ = kD + kPad;  /* Q and K rows in shared memory */
constexpr int kLdV = kDv + kPad; /* V and dO rows */

/* Forward: each warp owns kFwdMI blocks of 16 query rows, 2 for heads up to kFwdMaxTwoBlockDim.
 * Two (4 warps of 32 rows, FA2's split, 32 keys per step, P packed to 16 bits) cut shared-memory
 * reads per MMA by a third and fit 255 registers for D <= 96 with mods, D <= 128 without; but on
 * the H200 (2026-11-29, B*H 64, S 4096, D 128 bf16) it ran the forward at 197 TFLOP/s against 225
 * for one block of 16 rows (8 warps, 64 keys per step), so it is off (0). Dv 256 takes 32 keys per
 * step so the 16 x 256 O accumulator fits. path_sm80.c mirrors this (FWD_TWO_BLOCK_MAX_DIM). */
constexpr int kFwdMaxTwoBlockDim = 0;
constexpr int kFwdMI = (kD <= kFwdMaxTwoBlockDim && kDv <= kFwdMaxTwoBlockDim) ? 2 : 1;
constexpr int kFwdM = 128, kFwdN = (kDv > 192 || kFwdMI == 2) ? 32 : 64;
constexpr int kFwdWarps = kFwdM / (16 * kFwdMI), kFwdThreads = kFwdWarps * 32;
constexpr int kFwdMinBlocks = kFwdMI == 2 ? 2 : 1;
constexpr int kFwdQkUnroll = kFwdMI == 2 ? 1 : 2; /* fewer live Q/K fragments where registers are tight */
constexpr int kBwdM = 64, kBwdN = 64, kBwdWarps = 8, kBwdThreads = kBwdWarps * 32;
constexpr int kLdP = kBwdN + kPad; /* P and dS tiles of the backward, [q][kv] */
/* dQ columns per warp per pass: 32 where registers allow (fewer reloads of dS), 16 otherwise. */
constexpr int kBwdDqChunk = (kD == 64 || kD == 128) ? 32 : 16;
/* Forward: Q fragments held in registers for the whole KV walk (no reload per tile) up to D 128. */
constexpr bool kFwdQInRegs = kFwdMI == 1 && kD <= 128;

static_assert(kD % 32 == 0 && kDv % 32 == 0, "head dims must be multiples of 32");
static_assert(kD <= 256 && kDv <= 256, "head dims above 256 are not supported");
static_assert(kFwdM == 16 * kFwdMI * kFwdWarps, "warps must tile the query rows");
static_assert((kD / 2) % kBwdDqChunk == 0, "dQ chunks must tile the warp's columns");

constexpr int kFwdSmem = (kFwdM * kLdQ + kFwdN * kLdQ + kFwdN * kLdV) * 2;
/* The backward double-buffers Q and dO (the next query tile loads while this one computes) when
 * that fits in the shared memory every sm80+ GPU has (A100: 163 KB); D 192/256 use one stage. */
constexpr int kBwdSmemStage = (kBwdM * kLdQ + kBwdM * kLdV) * 2;
constexpr int kBwdSmemFixed = (kBwdN * kLdQ + kBwdN * kLdV + 2 * kBwdM * kLdP) * 2 + 2 * kBwdM * 4;
constexpr int kBwdStages = kBwdSmemFixed + 2 * kBwdSmemStage <= 160 * 1024 ? 2 : 1;
constexpr int kBwdSmem = kBwdSmemFixed + kBwdStages * kBwdSmemStage;

#endif /* FA4_SM80_CONFIG_CUH */
