# Model of the sm90 forward's accumulator fragment (wgmma m64nNk16, f32 accumulators) and the
# STG128 quad transpose in epilogue.cuh: lane = 4 * g + t holds, for block ni (8 columns) and
# row half r, columns ni*8 + 2t, +1 of row g + 8r (acc[ni][2r], acc[ni][2r+1]) -> one 32-bit word
# W[lane][ni][r] = (row, col pair). After the transpose of each group of 4 blocks, lane t of a quad
# must hold the 4 words of block 4*grp + t in column order (16 bytes = 8 consecutive elements).
import itertools
def shfl_xor(vals, m):  # vals[lane] -> what each lane receives
    return [vals[l ^ m] for l in range(32)]
NB = 16  # D 128
ok = True
for r in range(2):
    for grp in range(NB // 4):
        # w[lane][k] = (row, first col) of the word of block 4grp+k
        w = [[(l // 4 + 8 * r, (4 * grp + k) * 8 + 2 * (l & 3)) for k in range(4)] for l in range(32)]
        # round 1, xor 1: odd lanes send slots 0, 2; even lanes 1, 3; received into the same slot
        a0 = [w[l][0] if l & 1 else w[l][1] for l in range(32)]
        a1 = [w[l][2] if l & 1 else w[l][3] for l in range(32)]
        a0, a1 = shfl_xor(a0, 1), shfl_xor(a1, 1)
        for l in range(32):
            if l & 1: w[l][0], w[l][2] = a0[l], a1[l]
            else: w[l][1], w[l][3] = a0[l], a1[l]
        # round 2, xor 2: lanes with bit 1 send slots 0, 1; the others 2, 3
        b0 = [w[l][0] if l & 2 else w[l][2] for l in range(32)]
        b1 = [w[l][1] if l & 2 else w[l][3] for l in range(32)]
        b0, b1 = shfl_xor(b0, 2), shfl_xor(b1, 2)
        for l in range(32):
            if l & 2: w[l][0], w[l][1] = b0[l], b1[l]
            else: w[l][2], w[l][3] = b0[l], b1[l]
        for l in range(32):
            t = l & 3
            want = [(l // 4 + 8 * r, (4 * grp + t) * 8 + 2 * s) for s in range(4)]
            if w[l] != want:
                ok = False; print("mismatch", r, grp, l, w[l], want)
        # the 16-byte store of lane l goes to row l//4+8r, column (4grp + t)*8: the 4 lanes of a quad
        # cover 32 consecutive columns (64 bytes) of one row, each 16-byte aligned
print("transpose OK" if ok else "transpose FAILED")

# STG128=2: 8-byte stores after one xor-1 round per pair of blocks (2q, 2q+1): the even lane sends
# its word of block 2q+1 and receives its partner's of block 2q; the odd lane the reverse. Then the
# even lane t holds words t, t+1 of block 2q (columns 16q + 2t .. +3), the odd lane t words t-1, t
# of block 2q+1 (columns 16q + 8 + 2(t-1) .. +3).
ok = True
for r in range(2):
    for q in range(NB // 2):
        w = [[(l // 4 + 8 * r, (2 * q + k) * 8 + 2 * (l & 3)) for k in range(2)] for l in range(32)]
        send = [w[l][0] if l & 1 else w[l][1] for l in range(32)]
        recv = shfl_xor(send, 1)
        out = []
        for l in range(32):
            pair = [w[l][0], recv[l]] if not l & 1 else [recv[l], w[l][1]]
            out.append(pair)
        for l in range(32):
            t = l & 3
            blk = 2 * q + (t & 1)
            c0 = blk * 8 + 2 * (t & ~1)
            want = [(l // 4 + 8 * r, c0), (l // 4 + 8 * r, c0 + 2)]
            if out[l] != want:
                ok = False; print("mismatch64", r, q, l, out[l], want)
        # a quad covers 32 consecutive bytes? lanes 0..3 -> blocks 2q (t 0, 2) and 2q+1 (t 1, 3)
        cols = sorted((out[l][0][1]) for l in range(4))
        assert cols == [16 * q, 16 * q + 4, 16 * q + 8, 16 * q + 12], cols
print("transpose64 OK" if ok else "transpose64 FAILED")
