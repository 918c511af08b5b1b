/*
 * config.cuh - tile geometry of the sm90 forward, in one place with the checks that keep it legal.
 * 3 warpgroups: warpgroup 0 produces (one thread issues TMA), warpgroups 1 and 2 consume 64 query
 * rows each (kM = 128); the grid is persistent (a CTA walks tiles blockIdx.x, +gridDim.x, ...).
 * K and V tiles of kN keys stream through a kStages ring. Shared-memory tiles
 * are stored as 64-column panels of 128-byte rows in TMA's 128-byte swizzle, which is also the
 * layout the wgmma descriptors describe; head dims that are not multiples of 64 are padded up to
 * the next panel (TMA fills the missing columns with zeros).
 * The host launcher (src/jit/path_sm90.c) mirrors these numbers; keep both in step.
 */
#ifndef FA4_SM90_CONFIG_CUH
#define FA4_SM90_CONFIG_CUH

#ifndef FA4_HEAD_DIM
#error "FA4_HEAD_DIM must be defined by the pipeline"
#endif
#ifndef FA4_HEAD_DIM_V
#define FA4_HEAD_DIM_V FA4_HEAD_DIM
#endif
#ifndef FA4_RESCALE_THRESHOLD
#define FA4_RESCALE_THRESHOLD 0.0f
#endif
#ifndef FA4_SW_EXP2_PERCENT
#define FA4_SW_EXP2_PERCENT 0
#endif

constexpr int kD = FA4_HEAD_DIM;
constexpr int kDv = FA4_HEAD_DIM_V;
constexpr int kDp = (kD + 63) / 64 * 64;   /* padded to whole panels */
constexpr int kDvp = (kDv + 63) / 64 * 64;
constexpr int kM = 128;                    /* query rows per CTA */
constexpr int kN = (kDp <= 128 && kDvp <= 128) ? 128 : 64; /* keys per step */
/* Three K/V stages where they fit in the 227 KB an sm_90 block may have, else two. */
constexpr int kSmem3 = 1024 + kM * kDp * 2 + 3 * kN * (kDp + kDvp) * 2 + 256;
#ifndef FA4_SM90_STAGES
constexpr int kStages = kSmem3 <= 227 * 1024 ? 3 : 2;
#else
constexpr int kStages = FA4_SM90_STAGES;
#endif
constexpr int kThreads = 384;
constexpr float kRescaleThreshold = FA4_RESCALE_THRESHOLD; /* log2 units; <= 0: off */
constexpr int kProducerRegs = 24, kConsumerRegs = 240;

constexpr int kPanelBytes = 128;           /* one swizzled row of a panel */
constexpr int kQBytes = kM * kDp * 2;
constexpr int kKBytes = kN * kDp * 2;
constexpr int kVBytes = kN * kDvp * 2;
constexpr int kSmemTiles = kQBytes + kStages * (kKBytes + kVBytes);
constexpr int kSmemBytes = 1024 + kSmemTiles + 256; /* alignment slack, tiles, barriers */

static_assert(kD % 32 == 0 && kDv % 32 == 0, "head dims must be multiples of 32");
static_assert(kDp <= 256 && kDvp <= 256, "head dims above 256 are not supported");
static_assert(kSmemBytes <= 227 * 1024, "shared memory over the sm_90 limit");
static_assert(kProducerRegs * 128 + 2 * kConsumerRegs * 128 <= 65536, "register file");

#endif /* FA4_SM90_CONFIG_CUH */
