"""The benchmark's own code without a GPU: bench/run.py --dry-run (case list, FLOP counts against a
dense evaluation of the twins, the JSON / markdown / plot writers on fake timings) and
bench/mockrun.py (run.py's real path with torch.cuda stubbed and every backend a float32 CPU
attention: the correctness guard's wrong, slice-checked and peer-less paths). Skips without torch.
"""

import os
import subprocess
import sys

import pytest


def _run(repo, tmp_path, *args, timeout):
    pytest.importorskip("torch")
    # Neither script loads libfa4jit, so the ASan runtime that CI preloads for the sanitizer build
    # (scripts/test.sh) would only slow torch's CPU attention down (the mock run 80 s -> 66 s
    # without); a script that did load the sanitizer library would now fail to, not pass unchecked.
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    r = subprocess.run([sys.executable, *args, "--out", str(tmp_path)], cwd=repo, capture_output=True,
                       text=True, timeout=timeout, env=env)
    return r.returncode, r.stdout + r.stderr


def test_dry_run(repo, tmp_path):
    rc, out = _run(repo, tmp_path, os.path.join("bench", "run.py"), "--dry-run", timeout=300)
    assert rc == 0 and "dry run ok" in out, out[-3000:]


def test_mock_run(repo, tmp_path):
    rc, out = _run(repo, tmp_path, os.path.join("bench", "mockrun.py"), timeout=600)
    assert rc == 0 and "MOCK RUN OK" in out, out[-3000:]
