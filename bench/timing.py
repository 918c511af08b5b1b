"""CUDA-event timing with the host kept out of the measured interval.

Each repetition first enqueues a GPU spin (torch.cuda._sleep) long enough for the host to enqueue
the timed call behind it, then records start, the call, end. The interval between the events is
then the device time of the call alone: launch gaps and Python/ctypes overhead on the host are not
in it (host launch overhead is measured separately). Inputs rotate among several buffer sets, so
a repetition never finds its inputs in L2 from the previous one. The median is reported.
"""

import statistics
import time


class Timer:
    def __init__(self, torch):
        self.torch = torch
        self.cycles_per_ms = None
        self.has_sleep = hasattr(torch.cuda, "_sleep")

    def calibrate(self):
        """GPU cycles of torch.cuda._sleep per millisecond (clocks as found)."""
        torch = self.torch
        if not self.has_sleep:
            return None
        torch.cuda._sleep(2_000_000)  # wake the clocks
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        best = None
        for _ in range(3):
            e0.record()
            torch.cuda._sleep(20_000_000)
            e1.record()
            torch.cuda.synchronize()
            ms = e0.elapsed_time(e1)
            best = ms if best is None else min(best, ms)
        self.cycles_per_ms = 20_000_000 / best if best else None
        return self.cycles_per_ms

    def _spin(self, ms):
        if self.has_sleep and self.cycles_per_ms:
            self.torch.cuda._sleep(int(ms * self.cycles_per_ms))

    def measure(self, fn, nsets, warmup, reps):
        """fn(i) runs the work on buffer set i % nsets. Returns a dict of milliseconds."""
        torch = self.torch
        for i in range(warmup):
            fn(i % nsets)
        torch.cuda.synchronize()
        # how long the host takes to enqueue one call (sizes the spin)
        t0 = time.perf_counter()
        fn(0)
        enqueue_ms = (time.perf_counter() - t0) * 1e3
        torch.cuda.synchronize()
        spin_ms = min(100.0, max(0.5, 3.0 * enqueue_ms))
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for r in range(reps):
            self._spin(spin_ms)
            starts[r].record()
            fn((r + 1) % nsets)
            ends[r].record()
        torch.cuda.synchronize()
        ms = [s.elapsed_time(e) for s, e in zip(starts, ends)]
        return {
            "median_ms": statistics.median(ms),
            "min_ms": min(ms),
            "max_ms": max(ms),
            "reps": reps,
            "warmup": warmup,
            "host_enqueue_ms": enqueue_ms,
            "spin_ms": spin_ms if (self.has_sleep and self.cycles_per_ms) else 0.0,
        }


def fake_measure(seed_ms):
    """Dry-run stand-in with the same fields."""
    return {"median_ms": seed_ms, "min_ms": seed_ms * 0.98, "max_ms": seed_ms * 1.03, "reps": 0,
            "warmup": 0, "host_enqueue_ms": 0.0, "spin_ms": 0.0, "fake": True}
