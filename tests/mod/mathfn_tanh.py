"""Derive the coefficients of fa4_tanhf (src/jit/mod/mathfn.h) and check the header against them.

fa4_tanhf(x) = N / Q on a = x clamped to [-C, C], N = a + a^3 P(a^2), Q = 1 + a^2 R(a^2), P of
degree 3 and R of degree 4 (the rational of degrees (4, 4) in z = a^2 with N(0)' = Q(0) = 1):
the minimax of the relative error of N / (a Q) against tanh(a) / a over (0, F], F = 9.5, by the
rational Remez algorithm in mpmath at 50 digits, its coefficients rounded to float. F lies past the
point where tanh rounds to 1 in float (13 ln 2 ~ 9.011). The default form (quotient by the
approximate reciprocal alone) clamps at C = 10.25, where N / Q exceeds 1 by enough that the float
code gives exactly 1; the corrected form (FA4__MATHFN_TANHF_CORRECTED) at C = F
(tests/mod/test_mod_mathfn.c checks both, and the error of the float code).

    python3 tests/mod/mathfn_tanh.py                  print the coefficients as mathfn.h spells them
    python3 tests/mod/mathfn_tanh.py --check HEADER   exit 1 unless HEADER has exactly these
                                                     (77: mpmath missing, nothing checked)
"""

import re
import struct
import sys

try:
    import mpmath as mp
except ImportError:
    print("mathfn_tanh: mpmath is not installed, nothing checked")
    sys.exit(77)

mp.mp.dps = 50
N_DEGREE, M_DEGREE = 4, 4
FIT_END = 9.5
CLAMP = {"FA4__MATHFN_TANHF": 10.25, "FA4__MATHFN_TANHF_CORRECTED": FIT_END}


def g(z):
    """tanh(sqrt z) / sqrt z, which N / (a Q) approximates in z = a^2 (its limit 1 at 0)."""
    if z == 0:
        return mp.mpf(1)
    x = mp.sqrt(z)
    return mp.tanh(x) / x


def horner(cf, z):
    r = mp.mpf(0)
    for a in reversed(cf):
        r = r * z + a
    return r


def remez(n, m, c, iters=40):
    """p[0..n], q[0..m] with p[0] = q[0] = 1 minimising max |p(z) / (q(z) g(z)) - 1| on (0, c^2]."""
    k = n + m + 1                          # unknowns p1..pn, q1..qm, E; as many reference points
    c = mp.mpf(c)
    ref = [c ** 2 * mp.sin(mp.pi / 2 * (i + 1) / k) ** 2 for i in range(k)]
    p, q, e = [mp.mpf(1)] + [mp.mpf(0)] * n, [mp.mpf(1)] + [mp.mpf(0)] * m, mp.mpf(0)

    def err(z):
        return horner(p, z) / (horner(q, z) * g(z)) - 1

    grid = [c * i / 4000 for i in range(1, 4001)]
    worst = mp.mpf(1)
    for _ in range(iters):
        for _ in range(20):                # p(z) - g q(z) = (-1)^i E g q_prev(z), linear in p, q, E
            qprev = [horner(q, z) for z in ref]
            a, b = mp.matrix(k, k), mp.matrix(k, 1)
            for i, z in enumerate(ref):
                gi = g(z)
                for j in range(1, n + 1):
                    a[i, j - 1] = z ** j
                for j in range(1, m + 1):
                    a[i, n + j - 1] = -gi * z ** j
                a[i, k - 1] = -(-1) ** i * gi * qprev[i]
                b[i] = gi - 1
            s = mp.lu_solve(a, b)
            p = [mp.mpf(1)] + [s[j] for j in range(n)]
            q = [mp.mpf(1)] + [s[n + j] for j in range(m)]
            done = abs(s[k - 1] - e) <= abs(s[k - 1]) * mp.mpf(10) ** -30
            e = s[k - 1]
            if done:
                break
        runs = []                          # the extremum of each run of one sign, on a grid in a
        for x in grid:
            v = err(x * x)
            if runs and (runs[-1][1] > 0) == (v > 0):
                if abs(v) > abs(runs[-1][1]):
                    runs[-1] = [x, v]
            else:
                runs.append([x, v])
        new = []
        for x, _ in runs:                  # refined by golden section on |err|
            lo, hi = max(x - c / 4000, c / 400000), min(x + c / 4000, c)
            for _ in range(60):
                m1, m2 = lo + (hi - lo) * mp.mpf(0.381966), lo + (hi - lo) * mp.mpf(0.618034)
                if abs(err(m1 * m1)) > abs(err(m2 * m2)):
                    hi = m2
                else:
                    lo = m1
            new.append(((lo + hi) / 2) ** 2)
        while len(new) > k:                # keep k alternating points: drop the smaller end
            new.pop(0 if abs(err(new[0])) < abs(err(new[-1])) else -1)
        worst = max(abs(err(x * x)) for x in grid)
        if len(new) < k:
            break
        ref = new
        if worst - abs(e) <= abs(e) * mp.mpf(10) ** -8:
            break
    return p, q, worst


def c_float(v):
    """v rounded to float, spelt as the header does: 0x1.xxxxxxp+e with trailing zeros dropped."""
    f = struct.unpack("<f", struct.pack("<f", float(v)))[0]
    sign = "-" if f < 0 else ""
    mant, exp = abs(f).hex()[2:].split("p")
    whole, frac = (mant.split(".") + [""])[:2]
    frac = frac.rstrip("0")
    return f"{sign}0x{whole}{'.' + frac if frac else ''}p{int(exp):+d}f"


def coefficients(n=N_DEGREE, m=M_DEGREE, c=FIT_END):
    """P's and R's literals from the highest coefficient down, and the minimax error."""
    p, q, worst = remez(n, m, c)
    return [c_float(v) for v in reversed(p[1:])], [c_float(v) for v in reversed(q[1:])], worst


def header_coefficients(path, macro):
    """The literals of the two Horner chains of the header's rational (FA4__MATHFN_TANH_NQ), highest
    first, and the clamp C that the form `macro` passes it."""
    text = open(path).read()
    lit = r"(-?0x[0-9a-f.]+p[+-]\d+f)"
    body = text[text.index("#define FA4__MATHFN_TANH_NQ("):]
    body = body[:body.index("#define", 10)]
    chain = lambda v, t: (re.findall(r"float %s = %s;" % (v, lit), body) +
                          re.findall(r"%s = fmaf\(%s, %s, %s\);" % (v, v, t, lit), body))
    form = text[text.index("#define %s(" % macro):]
    form = form[:form.index("#define", 10)]
    clamp = re.findall(r"FA4__MATHFN_TANH_NQ\(%s\)" % lit, form)
    return chain("p", "z"), chain("q", "z"), clamp


def main():
    p, q, worst = coefficients()
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        bad = 0
        for macro, clamp in CLAMP.items():
            hp, hq, hc = header_coefficients(sys.argv[2], macro)
            ok = (hp, hq, hc) == (p, q, [c_float(clamp)])
            print(f"mathfn_tanh: {sys.argv[2]}: {macro}'s coefficients "
                  f"{'match' if ok else 'DIFFER FROM'} the derivation")
            if not ok:
                print(f"  header  P {hp} R {hq} C {hc}\n  derived P {p} R {q} C {c_float(clamp)}")
            bad += not ok
        return 1 if bad else 0
    print(f"rational ({N_DEGREE}, {M_DEGREE}) in a^2 on [0, {FIT_END}]: minimax relative error "
          f"{mp.nstr(worst, 4)} = 2^{mp.nstr(mp.log(worst, 2), 4)} before rounding to float")
    print(f"C {c_float(CLAMP['FA4__MATHFN_TANHF'])} (corrected form {c_float(FIT_END)})\nP (highest first) {' '.join(p)}\nR (highest first, then 1) {' '.join(q)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
