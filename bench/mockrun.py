"""A CPU rehearsal of run.py's real code path (not the dry run's fake tables): torch.cuda is
stubbed, the cases are shrunk, and every backend is replaced by a float32 math attention on the CPU
(built from the mods' PyTorch twins), with the 'fa4jit-sm90' stand-in deliberately wrong so the
correctness guard's 'wrong' path runs. Needs torch (any version with torch.autograd); no GPU, no
FlexAttention, no fa4jit library. Developer tool:

    python3 bench/mockrun.py [--out DIR]
"""

import argparse
import json
import math
import os
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import cases as cs  # noqa: E402


# ------------------------------------------------------------------------------ torch.cuda stub
class _Event:
    def __init__(self, enable_timing=True):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def elapsed_time(self, other):
        return (other.t - self.t) * 1e3


def stub_cuda():
    c = torch.cuda
    c.is_available = lambda: True
    c.synchronize = lambda *a, **k: None
    c.Event = _Event
    c._sleep = lambda cycles: None
    c.empty_cache = lambda: None
    c.current_device = lambda: 0
    c.get_device_name = lambda i=0: "MOCK CPU"
    c.current_stream = lambda *a: types.SimpleNamespace(cuda_stream=0)


# --------------------------------------------------------------------------- math attention
class MathRunner:
    def __init__(self, name, case, inp, wrong=False, noise=0.0):
        import backends
        self.name, self.case, self.inp, self.wrong, self.noise = name, case, inp, wrong, noise
        tw = backends._twins()
        self.score = self.mask = None
        if case.score_mod:
            self.score, self.mask = tw.build(case.score_mod, inp.aux)
        if case.mask_mod:
            _, self.mask = tw.build(case.mask_mod, inp.aux)
        if case.causal:
            self.mask = lambda b, h, q, kv: q >= kv
        if case.varlen:
            doc = inp.varlen_doc_id.long()
            self.mask = lambda b, h, q, kv: doc[q] == doc[kv]

    def _attn(self, q, k, v):
        c = self.case
        if c.varlen:
            q, k, v = (t.transpose(0, 1).unsqueeze(0) for t in (q, k, v))
        rep = c.Hq // c.Hkv
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        qf, kf, vf = q.float(), k.float(), v.float()
        s = qf @ kf.transpose(-1, -2) / math.sqrt(c.D)
        B, H, S, _ = s.shape
        b = torch.arange(B)[:, None, None, None]
        h = torch.arange(H)[None, :, None, None]
        qi = torch.arange(S)[None, None, :, None]
        ki = torch.arange(S)[None, None, None, :]
        if self.score:
            s = self.score(s, b, h, qi, ki)
        if self.mask:
            s = s.masked_fill(~self.mask(b, h, qi, ki).expand_as(s), float("-inf"))
        p = torch.softmax(s, -1)
        o = (p @ vf)
        if self.wrong:
            o = o * 1.5
        if self.noise:
            o = o + self.noise * torch.randn_like(o)
        o = o.to(q.dtype)
        return o[0].transpose(0, 1) if c.varlen else o

    def fwd(self, i):
        q, k, v, _ = self.inp.sets[i % self.inp.nsets]
        with torch.no_grad():
            return self._attn(q, k, v)

    def fwdbwd(self, i):
        if self.name == "flex" and self.case.trainable:
            # as Flex's Triton backward on the H200 (shared memory), so the eager slice runs
            raise RuntimeError("mock: No valid triton configs. out of resource: shared memory")
        q, k, v, do = self.inp.grad_sets[i % self.inp.nsets]
        out = self._attn(q, k, v)
        ins = [q, k, v] + list(self.inp.trainable)
        return out, list(torch.autograd.grad(out, ins, do))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/fa4jit-bench-mock")
    ap.add_argument("--full", action="store_true", help="the full mode's case list (shrunk)")
    ap.add_argument("--budget-s", default="3000",
                    help="run.py's budget (a small one exercises the skips and the watchdog)")
    ap.add_argument("--grace-s", default="60")
    a = ap.parse_args(argv)
    stub_cuda()
    # shrink the cases
    cs.TOKENS, cs.BASE_S, cs.SEQ_SWEEP, cs.WINDOW, cs.HEADS = 256, 128, (64, 128, 256), 32, 2
    cs.varlen_lengths = lambda: [64, 128, 64]
    orig_doc = cs.doc_lengths
    cs.doc_lengths = lambda S: orig_doc(S, lo=16, hi=64)
    import backends
    import run

    class CpuInputs(backends.Inputs):
        def __init__(self, case, nsets, device="cuda", seed=0, tensors=True):
            super().__init__(case, nsets, device="cpu", seed=seed, tensors=tensors)

    backends.Inputs = CpuInputs

    def make_runner(name, case, inp):
        if name in ("cudnn", "fa2") and (case.score_mod or case.mask_mod):
            raise backends.Unsupported("SDPA has no score_mod/mask_mod")
        if name == "cudnn" and case.varlen:
            raise backends.Unsupported("cuDNN varlen is not reachable through torch SDPA")
        if name == "cudnn" and case.D == 256:
            raise RuntimeError("mock: cuDNN refuses D=256")
        if name == "flex" and case.score_mod == "alibi":  # no peer: the forward's eager slice check
            raise backends.Unsupported("mock: no peer for alibi")
        return MathRunner(name, case, inp, wrong=(name == "fa4jit-sm90" and case.D == 64),
                          noise=2e-4 if name.startswith("fa4jit") else 0.0)

    backends.make_runner = make_runner

    def fa4_runner(case, inp, path, deterministic=False):
        return MathRunner("fa4jit-" + path, case, inp, noise=0.0 if deterministic else 2e-4)
    backends.Fa4Runner = fa4_runner
    backends.FlexRunner = lambda case, inp, kernel_options=None: MathRunner("flex", case, inp)
    run.bootstrap = lambda: sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
    run.collect_env = lambda torch: {"gpu": "MOCK CPU", "torch": torch.__version__,
                                     "fa4jit_version": "mock", "fa4jit_kernel_fingerprint": "-"}
    run.nvidia_smi = lambda: {"note": "mock"}
    run.precompile_jobs = lambda cases, paths, torch: []
    run._fa4_kernel_info = lambda c, path, torch: {"path": path, "mock": True}
    rc = run.main((["--quick"] if not a.full else []) +
                  ["--out", a.out, "--no-jit", "--no-launch", "--no-trace", "--reps", "3", "--nsets", "2",
                   "--stem", "mock", "--budget-s", a.budget_s, "--grace-s", a.grace_s])
    if a.full or a.budget_s != "3000":  # a rehearsal of the plan, not of the guard
        data = json.load(open(os.path.join(a.out, "mock.json")))
        for c in data["cases"]:
            print(f"  {c['id']:<34} est {c.get('est_s', 0):6.1f} s  wall {c.get('wall_s', 0):6.1f} s"
                  f"  flex {c['results'].get('flex', {}).get('status')}")
        print("skipped:", data.get("skipped"), "watchdog:", data.get("watchdog"))
        return rc
    data = json.load(open(os.path.join(a.out, "mock.json")))
    bad = []
    for c in data["cases"]:
        for b, r in c["results"].items():
            if r.get("status") == "error" or r.get("bwd_status") == "error":
                bad.append((c["id"], b, r.get("error") or r.get("bwd_error")))
    want_wrong = [c["id"] for c in data["cases"]
                  if c["results"].get("fa4jit-sm90", {}).get("status") == "wrong"]
    print("errors:", bad)
    print("wrong (expected: the D=64 case):", want_wrong)
    by = {c["id"]: c for c in data["cases"]}
    rb = by.get("mods:rel._bias_(trainable)", {}).get("results", {})
    sc = rb.get("fa4jit-sm80", {}).get("slice_check")
    print("rel_bias slice check (eager fp32 reference):", sc, rb.get("fa4jit-sm80", {}).get(
        "bwd_status"))
    det = by.get("plain_seqlen:S=128", {}).get("results", {}).get("fa4jit-sm80", {}).get(
        "deterministic")
    print("deterministic row:", {k: v for k, v in (det or {}).items() if k != "fwdbwd"})
    al = by.get("mods:ALiBi", {}).get("results", {}).get("fa4jit-sm80", {})
    print("ALiBi without a peer:", al.get("status"), al.get("ref"), al.get("err_fwd"))
    md = open(os.path.join(a.out, "mock.md")).read()
    ok = rc == 0 and want_wrong == ["headdim:D=64"] and all(
        "cuDNN refuses" in (e or "") or "mock: No valid triton" in (e or "") for _, b, e in bad)
    ok = ok and sc is not None and rb["fa4jit-sm80"].get("bwd_status") == "ok" and \
        len(sc["err_grads"]) == 4 and det and det.get("status") == "ok" and \
        "Deterministic backward" in md and "fa4jit / FlexAttention" in md and \
        al.get("status") == "ok" and al.get("ref") == "eager fp32 slice (b=0)"
    print("MOCK RUN", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
