"""cudnn_bwd_once.py - cuDNN's attention forward and backward (PyTorch SDPA, cuDNN backend) a few
times at one shape, for a profiler to capture (bench/sm90/ncu_bwd_vs_cudnn.sh). Not a benchmark:
no timing here.
    python3 bench/sm90/cudnn_bwd_once.py plain|causal [B H S D]
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("plain", "causal"):
        sys.exit("usage: cudnn_bwd_once.py plain|causal [B H S D]")
    causal = sys.argv[1] == "causal"
    b, h, s, d = (int(x) for x in sys.argv[2:6]) if len(sys.argv) >= 6 else (4, 16, 4096, 128)
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, generator=g).requires_grad_()
               for _ in range(3))
    do = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, generator=g)
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        for _ in range(3):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            o.backward(do)
            q.grad = k.grad = v.grad = None
    torch.cuda.synchronize()
    print(f"cudnn_bwd_once: {sys.argv[1]} B={b} H={h} S={s} D={d} done")


if __name__ == "__main__":
    main()
