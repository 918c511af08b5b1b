"""A tiny pure-Python PNG bar-chart writer, used when matplotlib is not importable.

grouped_bars(path, panels) draws each panel (title, ylabel, categories, series of
(label, color, values, texts), log scale flag) as grouped vertical bars with value labels and a
legend, in a 5x7 bitmap font (letters are drawn upper-case). zlib + struct only.
"""

import math
import struct
import zlib

_F = {
    " ": "00000", "0": "0E 11 13 15 19 11 0E", "1": "04 0C 04 04 04 04 0E",
    "2": "0E 11 01 02 04 08 1F", "3": "1F 02 04 02 01 11 0E", "4": "02 06 0A 12 1F 02 02",
    "5": "1F 10 1E 01 01 11 0E", "6": "06 08 10 1E 11 11 0E", "7": "1F 01 02 04 08 08 08",
    "8": "0E 11 11 0E 11 11 0E", "9": "0E 11 11 0F 01 02 0C", "A": "0E 11 11 1F 11 11 11",
    "B": "1E 11 11 1E 11 11 1E", "C": "0E 11 10 10 10 11 0E", "D": "1C 12 11 11 11 12 1C",
    "E": "1F 10 10 1E 10 10 1F", "F": "1F 10 10 1E 10 10 10", "G": "0E 11 10 17 11 11 0F",
    "H": "11 11 11 1F 11 11 11", "I": "0E 04 04 04 04 04 0E", "J": "07 02 02 02 02 12 0C",
    "K": "11 12 14 18 14 12 11", "L": "10 10 10 10 10 10 1F", "M": "11 1B 15 15 11 11 11",
    "N": "11 11 19 15 13 11 11", "O": "0E 11 11 11 11 11 0E", "P": "1E 11 11 1E 10 10 10",
    "Q": "0E 11 11 11 15 12 0D", "R": "1E 11 11 1E 14 12 11", "S": "0F 10 10 0E 01 01 1E",
    "T": "1F 04 04 04 04 04 04", "U": "11 11 11 11 11 11 0E", "V": "11 11 11 11 11 0A 04",
    "W": "11 11 11 15 15 15 0A", "X": "11 11 0A 04 0A 11 11", "Y": "11 11 11 0A 04 04 04",
    "Z": "1F 01 02 04 08 10 1F", ".": "00 00 00 00 00 0C 0C", ",": "00 00 00 00 0C 04 08",
    ":": "00 0C 0C 00 0C 0C 00", ";": "00 0C 0C 00 0C 04 08", "-": "00 00 00 1F 00 00 00",
    "+": "00 04 04 1F 04 04 00", "/": "00 01 02 04 08 10 00", "(": "02 04 08 08 08 04 02",
    ")": "08 04 02 02 02 04 08", "%": "18 19 02 04 08 13 03", "=": "00 00 1F 00 1F 00 00",
    "_": "00 00 00 00 00 00 1F", "*": "00 04 15 0E 15 04 00", "<": "02 04 08 10 08 04 02",
    ">": "08 04 02 01 02 04 08", "[": "0E 08 08 08 08 08 0E", "]": "0E 02 02 02 02 02 0E",
    "'": "0C 04 08 00 00 00 00", "!": "04 04 04 04 04 00 04", "?": "0E 11 01 02 04 00 04",
    "#": "0A 0A 1F 0A 1F 0A 0A", "&": "0C 12 14 08 15 12 0D", "^": "04 0A 11 00 00 00 00",
}
_GLYPH = {}
for _k, _v in _F.items():
    rows = [int(x, 16) for x in _v.split()] if " " in _v else [0] * 7
    _GLYPH[_k] = rows


def _hex(c):
    c = c.lstrip("#")
    return tuple(int(c[i:i + 2], 16) for i in (0, 2, 4))


class Canvas:
    def __init__(self, w, h):
        self.w, self.h = w, h
        self.px = bytearray(b"\xff" * (w * h * 3))

    def rect(self, x0, y0, x1, y1, color):
        r, g, b = color
        x0, x1 = max(0, int(min(x0, x1))), min(self.w, int(max(x0, x1)))
        y0, y1 = max(0, int(min(y0, y1))), min(self.h, int(max(y0, y1)))
        row = bytes((r, g, b)) * (x1 - x0)
        for y in range(y0, y1):
            i = (y * self.w + x0) * 3
            self.px[i:i + len(row)] = row

    def text(self, x, y, s, color=(0, 0, 0), scale=1, vertical=False):
        """Top-left at (x, y); vertical text reads bottom to top."""
        cx = 0
        for ch in str(s):
            rows = _GLYPH.get(ch.upper(), _GLYPH["?"])
            for ry, bits in enumerate(rows):
                for rx in range(5):
                    if bits & (1 << (4 - rx)):
                        if vertical:
                            px, py = x + ry * scale, y - (cx + rx) * scale
                        else:
                            px, py = x + (cx + rx) * scale, y + ry * scale
                        self.rect(px, py, px + scale, py + scale, color)
            cx += 6
        return cx * scale

    def save(self, path):
        raw = b"".join(b"\x00" + bytes(self.px[y * self.w * 3:(y + 1) * self.w * 3])
                       for y in range(self.h))

        def chunk(tag, data):
            c = struct.pack(">I", len(data)) + tag + data
            return c + struct.pack(">I", zlib.crc32(tag + data) & 0xffffffff)
        png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", self.w, self.h, 8, 2,
                                                                0, 0, 0))
        png += chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")
        with open(path, "wb") as f:
            f.write(png)


def _panel(cv, y0, ph, W, spec):
    _, title, ylabel, cats, series, logy, _phase = spec
    left, right, top, bottom = 70, 20, 40, 60
    x0, x1, ya, yb = left, W - right, y0 + top, y0 + ph - bottom
    for i, line in enumerate(str(title).split("\n")):
        cv.text(left, y0 + 6 + i * 11, line[:int((W - left) / 6)])
    vals = [v for s in series for v in s[2] if v]
    vmax = max(vals or [1.0])
    if logy:
        lo = 10 ** math.floor(math.log10(max(min(vals or [1.0]), 1e-3)))
        hi = 10 ** math.ceil(math.log10(vmax * 1.5))

        def ypos(v):
            return yb - (math.log10(max(v, lo)) - math.log10(lo)) / \
                (math.log10(hi) - math.log10(lo)) * (yb - ya)
        ticks = [lo * 10 ** k for k in range(int(round(math.log10(hi / lo))) + 1)]
    else:
        step = 10 ** math.floor(math.log10(vmax)) if vmax > 0 else 1
        for m in (1, 2, 5, 10):
            if vmax / (step * m) <= 6:
                step *= m
                break
        hi = step * math.ceil(vmax * 1.15 / step)

        def ypos(v):
            return yb - v / hi * (yb - ya)
        ticks = [step * k for k in range(int(hi / step) + 1)]
    for t in ticks:
        y = ypos(t)
        cv.rect(x0, y, x1, y + 1, (225, 225, 225))
        lab = f"{t:g}"
        cv.text(x0 - 6 * len(lab) - 4, y - 3, lab)
    cv.rect(x0, ya, x0 + 1, yb, (0, 0, 0))
    cv.rect(x0, yb, x1, yb + 1, (0, 0, 0))
    cv.text(12, (ya + yb) / 2 + 3 * len(ylabel), ylabel, vertical=True)
    n = max(1, len(cats))
    slot = (x1 - x0) / n
    k = max(1, len(series))
    bw = slot * 0.8 / k
    for ci, cat in enumerate(cats):
        cx = x0 + slot * ci
        lab = str(cat)[: int(slot / 6)]
        cv.text(cx + slot / 2 - 3 * len(lab), yb + 6, lab)
        for si, (_lab, color, values, texts) in enumerate(series):
            v = values[ci]
            bx = cx + slot * 0.1 + bw * si
            if v:
                cv.rect(bx, ypos(v), bx + bw - 1, yb, _hex(color))
                s = f"{v:.0f}" if v >= 10 else f"{v:.2g}"
                if 6 * len(s) <= bw + 4:
                    cv.text(bx + bw / 2 - 3 * len(s), ypos(v) - 9, s)
                else:
                    cv.text(bx + bw / 2 - 3, ypos(v) - 3, s, vertical=True)
            elif texts and texts[ci] and texts[ci] != "-":
                cv.text(bx + bw / 2 - 3, yb - 4, texts[ci],
                        color=(176, 0, 0) if texts[ci] == "WRONG" else (90, 90, 90),
                        vertical=True)
    lx = x0
    for _lab, color, _v, _t in series:
        cv.rect(lx, yb + 24, lx + 10, yb + 34, _hex(color))
        lx += 14 + cv.text(lx + 14, yb + 26, _lab) + 12


def grouped_bars(path, panels):
    W = max(800, 120 * max(len(p[3]) for p in panels) + 120)
    ph = 380
    cv = Canvas(W, ph * len(panels))
    for i, spec in enumerate(panels):
        _panel(cv, i * ph, ph, W, spec)
    cv.save(path)
    return path
