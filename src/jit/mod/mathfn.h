/*
 * mathfn.h - the default float math of emitted mods (division, expf, exp2f, logf, log2f, tanhf),
 * written once in the subset of C that is also CUDA so that the very text the kernels run is
 * what tests/mod/test_mod_mathfn.c checks on the CPU. Each FA4__MATHFN_* macro expands to one
 * function; emit_prelude.c turns it into text with FA4__MATH_TEXT, the test compiles it as C with
 * the two PTX approximations emulated at their documented worst-case error.
 *
 * Why not libdevice: its tanhf, logf and IEEE division are long sequences with rarely-taken slow
 * paths; inlined per element of a fully unrolled score fragment they cost 3x the throughput of
 * plain attention (soft-capping) and tens of seconds of ptxas time (t5_bias). These forms are
 * straight-line code (selects, no branches) on the hardware approximations plus an exact-residual
 * correction or a short polynomial, and stay within a few ulps:
 *
 *   fa4_fdiv(a, b)  <= 1 ulp   r ~ 1/b by div.approx, q = a r, one exact-residual correction
 *                              (fma(-b, q, a)); a representable quotient comes out exact.
 *                              (<= 4.5 ulps where |a| < 2^-102: the residual is not representable;
 *                              |b| <= 2^-128 divides like 0, as under flush-to-zero.)
 *                              r is common code the compiler hoists where b does not change
 *                              between calls (div.approx is an intrinsic NVVM can merge and hoist,
 *                              inline asm is not), but q, the correction and the NaN select still
 *                              cost 5 instructions per score.
 *   fa4_fdiv_u(a, b) < 2 ulps  a times RN(1 / b): the emitter's form where b is the same at every
 *                              position (emit_deps.c: built from aux scalars, literals, b and h);
 *                              the IEEE reciprocal is computed once, a score pays one multiply.
 *                              Special values as IEEE a / b; |b| < 2^-126 divides like 0 (1 / b
 *                              overflows), |b| > 2^126 loses bits to the subnormal reciprocal.
 *   fa4_expf(x)     <= 2^-22.5 relative + 1/2 ulp   2^t by ex2.approx with t = x log2(e) split
 *                              into its rounded product and the exact remainder, which corrects
 *                              the result to first order (without it: up to 88 ulps near |x| = 88).
 *   fa4_exp2f(x)    <= 2^-22.5 relative             ex2.approx itself.
 *   fa4_logf(x)     <= 2 ulps   no hardware approximation: x = 2^k m, m in [sqrt(1/2), sqrt(2)),
 *                              log1p(m - 1) by a degree-7 polynomial, k ln 2 in two parts.
 *   fa4_log2f(x)    <= 2 ulps   the same core times log2(e); exact for powers of two.
 *   fa4_tanhf(x)    <= 6.75 ulps a rational of degrees (4, 4) in x^2 (minimax relative error
 *                              2^-24.75 on [0, 9.5]) on x clamped to [-10.25, 10.25]; one
 *                              reciprocal (rcp.approx) and no exponential: one MUFU operation per
 *                              element instead of two (ex2, rcp), which soft-capping pays at every
 *                              score besides the softmax's own ex2 (issue 8). Its error is the
 *                              rounding of N and Q where tanh is near 1 and an ulp is 2^-24 of the
 *                              value, and the reciprocal's: measured worst 6.70 ulps on the CPU
 *                              with rcp.approx emulated at its bound (test_mod_mathfn). The result
 *                              is held to [-1, 1] and is exactly +-1 from |x| = 10.25.
 *                              FA4_TANHF_CORRECTED 1 (emitted header) corrects the quotient once by
 *                              the exact residual: <= 5.25 ulps (5.13 emulated, 4.81 on an H200,
 *                              check_mathfn.py), exactly +-1 from 9.5, two FMAs more on the
 *                              reciprocal's dependency chain, which cost soft-cap's forward 10%
 *                              (H200, B4 H16 S4096 D128 bf16: 256 TFLOP/s corrected, 283 not,
 *                              229 for an ex2 + rcp form). The forms tried and their figures are in
 *                              notes/softcap-tanh.md.
 *
 * Results below 2^-126 may flush to zero (the .ftz approximations); NaN, infinities and zeros
 * follow C99 Annex F for every function. Polynomial coefficients: Chebyshev interpolation in long
 * double, rounded to float, checked by the test; tanhf's rational comes from the Remez algorithm in
 * tests/mod/mathfn_tanh.py (mpmath), which the ctest mod_mathfn_tanh_coefficients checks against
 * this file. The PTX bounds
 * assumed (PTX ISA): ex2.approx.f32 relative 2^-22.5, rcp.approx.f32 1 ulp, div.approx.f32 2 ulps
 * for |b| in [2^-126, 2^126].
 *
 * The includer defines fa4_rcp_approx(x) (rcp.approx.ftz.f32), fa4_rcp_div(x) (1 / x by
 * div.approx.f32), fa4_ex2_approx(x) (ex2.approx.ftz.f32), fa4_clamp_xorsign(x, c) for c > 0
 * (min.NaN.xorsign.abs.f32: copysign(min(|x|, c), x), NaN stays, one instruction),
 * fa4_as_int(x), fa4_as_float(i) and provides fmaf, fabsf, copysignf. Each ?: has plain operands (a chain of ?: becomes branches).
 * Comments stay outside the macros (they vanish from the text).
 */
#ifndef FA4_JIT_MOD_MATHFN_H
#define FA4_JIT_MOD_MATHFN_H

/* a / b: r ~ 1/b (computed once where b is uniform: the only value kept across elements), q = a r
 * and one correction by the exact residual; |b| > 2^126 and subnormal b are prescaled inside r */
#define FA4__MATHFN_FDIV(FN)                                                                      \
    FN float fa4_fdiv(float a, float b)                                                           \
    {                                                                                             \
        const float ab = fabsf(b);                                                                \
        const float s0 = ab < 0x1p-126f ? 0x1p24f : 1.0f;                                         \
        const float s = ab > 0x1p126f ? 0.25f : s0;                                               \
        const float r = s * fa4_rcp_div(b * s);                                                   \
        const float q = a * r;                                                                    \
        const float q1 = fmaf(fmaf(-b, q, a), r, q);                                              \
        return q1 != q1 ? q : q1;                                                                 \
    }

/* a / b where b is the same at every position (soft-capping's score / cap): a times the IEEE
 * reciprocal, which the compiler computes once, so a score costs one multiply instead of fa4_fdiv's
 * five instructions; two roundings, < 2 ulps for |b| in [2^-126, 2^126] */
#define FA4__MATHFN_RCP_U(FN)                                                                     \
    FN float fa4_rcp_u(float b) { return 1.0f / b; }
#define FA4__MATHFN_FDIV_U(FN)                                                                    \
    FN float fa4_fdiv_u(float a, float b) { return a * fa4_rcp_u(b); }

/* e^x: 2^t with t = RN(x L), plus the exact remainder c = x L - t + x (log2 e - L) */
#define FA4__MATHFN_EXPF(FN)                                                                      \
    FN float fa4_expf(float x)                                                                    \
    {                                                                                             \
        const float t = x * 0x1.715476p+0f;                                                          \
        const float c = fmaf(x, 0x1.4ae0cp-26f, fmaf(x, 0x1.715476p+0f, -t));                        \
        const float y = fa4_ex2_approx(t);                                                        \
        return fabsf(t) < 128.0f ? fmaf(y, c * 0x1.62e43p-1f, y) : y;                             \
    }

#define FA4__MATHFN_EXP2F(FN)                                                                     \
    FN float fa4_exp2f(float x) { return fa4_ex2_approx(x); }

/* log1p(f) for f in [sqrt(1/2) - 1, sqrt(2) - 1]: f + f^2 (-1/2 + f P(f)); *k gets the exponent */
#define FA4__MATHFN_LOG_CORE(FN)                                                                  \
    FN float fa4_log_core(float x, float *k)                                                      \
    {                                                                                             \
        const int sub = x < 0x1p-126f;                                                            \
        const int ix = fa4_as_int(sub ? x * 0x1p23f : x);                                         \
        const int e = (int)(((unsigned)ix + 0x00cafb0du) >> 23) - 128;                            \
        const float f = fa4_as_float((int)((unsigned)ix - ((unsigned)e << 23))) - 1.0f;           \
        float p = -0x1.43b246p-4f;                                                                \
        p = fmaf(p, f, 0x1.02814ep-3f);                                                           \
        p = fmaf(p, f, -0x1.0a33eap-3f);                                                          \
        p = fmaf(p, f, 0x1.231ce6p-3f);                                                           \
        p = fmaf(p, f, -0x1.54d03ep-3f);                                                          \
        p = fmaf(p, f, 0x1.999f14p-3f);                                                           \
        p = fmaf(p, f, -0x1.0000cep-2f);                                                          \
        p = fmaf(p, f, 0x1.555554p-2f);                                                           \
        *k = (float)(sub ? e - 23 : e);                                                           \
        return fmaf(f * f, fmaf(f, p, -0.5f), f);                                                 \
    }

/* the special values: log(+-0) = -inf, log(x < 0) = NaN, log(inf) = inf, NaN stays */
#define FA4__MATHFN_LOGF(FN)                                                                      \
    FN float fa4_logf(float x)                                                                    \
    {                                                                                             \
        float k;                                                                                  \
        const float l = fa4_log_core(x, &k);                                                      \
        const float r = fmaf(k, 0x1.62e400p-1f, fmaf(k, 0x1.7f7d1cp-20f, l));                     \
        const float sp0 = x > 0.0f ? x : fa4_as_float(0x7fffffff);                                \
        const float sp = x == 0.0f ? -fa4_as_float(0x7f800000) : sp0;                             \
        const int ok = (x > 0.0f) & (x <= 0x1.fffffep127f);                                       \
        return ok ? r : sp;                                                                       \
    }

#define FA4__MATHFN_LOG2F(FN)                                                                     \
    FN float fa4_log2f(float x)                                                                   \
    {                                                                                             \
        float k;                                                                                  \
        const float l = fa4_log_core(x, &k);                                                      \
        const float r = fmaf(l, 0x1.715476p+0f, fmaf(l, 0x1.4ae0cp-26f, k));                         \
        const float sp0 = x > 0.0f ? x : fa4_as_float(0x7fffffff);                                \
        const float sp = x == 0.0f ? -fa4_as_float(0x7f800000) : sp0;                             \
        const int ok = (x > 0.0f) & (x <= 0x1.fffffep127f);                                       \
        return ok ? r : sp;                                                                       \
    }

/* tanh's rational, N = a + a^3 P(a^2) and Q = 1 + a^2 R(a^2) on a = x clamped to [-C, C] (the
 * minimax on (0, 9.5]; tanh rounds to 1 from 13 ln 2 ~ 9.011): the body both forms below share */
#define FA4__MATHFN_TANH_NQ(C)                                                                    \
        const float a = fa4_clamp_xorsign(x, C);                                                  \
        const float z = a * a;                                                                    \
        float p = 0x1.af5f46p-27f;                                                                \
        p = fmaf(p, z, 0x1.50035p-16f);                                                           \
        p = fmaf(p, z, 0x1.c589d8p-9f);                                                           \
        p = fmaf(p, z, 0x1.116f18p-3f);                                                           \
        const float n = fmaf(a * z, p, a);                                                        \
        float q = 0x1.8fd9a2p-21f;                                                                \
        q = fmaf(q, z, 0x1.5275eep-12f);                                                          \
        q = fmaf(q, z, 0x1.a5c3c8p-6f);                                                           \
        q = fmaf(q, z, 0x1.de0cd4p-2f);                                                           \
        q = fmaf(q, z, 1.0f);

/* tanh: N / Q for C = 10.25, the quotient by rcp.approx alone, held to [-1, 1]. At the clamp N / Q
 * exceeds 1 by 23 units of 2^-24, more than the roundings of N, Q and the reciprocal take away,
 * so the result is exactly +-1 there (at 9.5 it is not). */
#define FA4__MATHFN_TANHF(FN)                                                                     \
    FN float fa4_tanhf(float x)                                                                   \
    {                                                                                             \
        FA4__MATHFN_TANH_NQ(0x1.48p+3f)                                                           \
        return fa4_clamp_xorsign(n * fa4_rcp_approx(q), 1.0f);                                    \
    }

/* The same rational for C = 9.5, with the quotient corrected once by the exact residual (negated,
 * which keeps the sign of 0): <= 5.25 ulps at two more FMAs on the reciprocal's dependency chain
 * (FA4_TANHF_CORRECTED 1 in the emitted header selects it; A/B runs). */
#define FA4__MATHFN_TANHF_CORRECTED(FN)                                                           \
    FN float fa4_tanhf(float x)                                                                   \
    {                                                                                             \
        FA4__MATHFN_TANH_NQ(0x1.3p+3f)                                                            \
        const float r = fa4_rcp_approx(q);                                                        \
        const float y = n * r;                                                                    \
        return fa4_clamp_xorsign(fmaf(-fmaf(q, y, -n), r, y), 1.0f);                              \
    }

/* The text of one function, for the emitter (one line; emit_prelude.c lays it out). */
#define FA4__MATH_STR_(x) #x
#define FA4__MATH_XSTR_(x) FA4__MATH_STR_(x)
#define FA4__MATH_TEXT(M) FA4__MATH_XSTR_(M(__device__ __forceinline__))

#endif /* FA4_JIT_MOD_MATHFN_H */
