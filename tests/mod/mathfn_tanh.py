"""Derive the coefficients of fa4_tanhf (src/jit/mod/mathfn.h) and check the header against them.

fa4_tanhf has two branches, both computed, one selected (|x| < 1 or not):
  |x| < 1:  x + x^3 P(x^2), P of degree 7 interpolating (tanh(x) - x) / x^3 at the 8 Chebyshev
            nodes of [0, 1] in z = x^2;
  |x| >= 1: with u = e^(-2|x|) in (0, e^-2] from ex2.approx, tanh|x| = (1 - u) / (1 + u) =
            1 + u W(u), W of degree 5 interpolating -2 / (1 + u) at the 6 Chebyshev nodes of
            [0, e^-2]: no reciprocal, so one MUFU operation (the ex2) per element.
Interpolation in mpmath at 40 digits, the monomial coefficients rounded to float; the test
(tests/mod/test_mod_mathfn.c) measures the error of the float code that uses them.

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

mp.mp.dps = 40
SPLIT = 1         # |x| below it: the polynomial
P_DEGREE = 7
W_DEGREE = 5


def interpolate(f, hi, degree):
    """Monomial coefficients of the polynomial through f at the Chebyshev nodes of [0, hi]."""
    nodes = [hi / 2 * (1 - mp.cos(mp.pi * (k + mp.mpf(1) / 2) / (degree + 1))) for k in range(degree + 1)]
    a = mp.matrix([[t ** j for j in range(degree + 1)] for t in nodes])
    return list(mp.lu_solve(a, mp.matrix([f(t) for t in nodes])))


def small_branch(z):
    """(tanh(x) - x) / x^3 at z = x^2 (its limit -1/3 at 0)."""
    if z == 0:
        return mp.mpf(-1) / 3
    x = mp.sqrt(z)
    return (mp.tanh(x) - x) / x ** 3


def c_float(v):
    """v rounded to float, spelt as the header does: 0x1.xxxxxxp+e with trailing zeros dropped."""
    f = struct.unpack("<f", struct.pack("<f", float(v)))[0]
    sign = "-" if f < 0 else ""
    mant, exp = abs(f).hex()[2:].split("p")
    whole, frac = (mant.split(".") + [""])[:2]
    frac = frac.rstrip("0")
    return f"{sign}0x{whole}{'.' + frac if frac else ''}p{int(exp):+d}f"


def coefficients():
    """(P from the highest coefficient down, W likewise), as C float literals."""
    p = interpolate(small_branch, mp.mpf(SPLIT) ** 2, P_DEGREE)
    w = interpolate(lambda u: -2 / (1 + u), mp.exp(-2 * mp.mpf(SPLIT)), W_DEGREE)
    return [c_float(v) for v in reversed(p)], [c_float(v) for v in reversed(w)]


def header_coefficients(path):
    """The literals of fa4_tanhf's two Horner chains in the header, highest first."""
    text = open(path).read()
    body = text[text.index("#define FA4__MATHFN_TANHF"):]
    body = body[:body.index("#define", 10)]
    lit = r"(-?0x[0-9a-f.]+p[+-]\d+f)"
    chain = lambda v, t: ([m for m in re.findall(r"float %s = %s;" % (v, lit), body)] +
                          re.findall(r"%s = fmaf\(%s, %s, %s\);" % (v, v, t, lit), body))
    return chain("p", "z"), chain("w", "u")


def main():
    p, w = coefficients()
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        hp, hw = header_coefficients(sys.argv[2])
        ok = (hp, hw) == (p, w)
        print(f"mathfn_tanh: {sys.argv[2]}: fa4_tanhf's coefficients "
              f"{'match' if ok else 'DIFFER FROM'} the derivation")
        if not ok:
            print(f"  header  P {hp}\n          W {hw}\n  derived P {p}\n          W {w}")
        return 0 if ok else 1
    print(f"P (|x| < {SPLIT}, in x^2, highest first): {' '.join(p)}")
    print(f"W (|x| >= {SPLIT}, in e^-2|x|, highest first): {' '.join(w)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
