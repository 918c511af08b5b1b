"""cli_resources.py - shared by the deviceless build checks of tests/cli: run `fa4jit compile
--json` and judge each program's resource report against an expected register count (no spill,
stack frame or serialized wgmma)."""
import json
import os
import subprocess


def mod_paths(names):
    """The shipped mods' files (mods/NAME.mod of this checkout)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return [os.path.join(root, "mods", n + ".mod") for n in names]


def cli_check_args(argv, doc, names):
    """(fa4jit command, the mods' paths, the environment without CUDA's cache) for a build check whose
    one argument is the fa4jit command; None (doc printed) for any other argv."""
    if len(argv) != 2:
        print(doc)
        return None
    return argv[1], mod_paths(names), dict(os.environ, CUDA_CACHE_DISABLE="1")


def compile_json(cmd, env):
    """(results, 0) from `fa4jit compile ... --json`; (None, status) when the command failed:
    77 where NVRTC is unavailable, else 2."""
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0 and not r.stdout.strip().startswith("["):
        print("command failed:", " ".join(cmd), "\n", r.stdout, r.stderr)
        return None, (77 if "NVRTC" in r.stderr and "unavailable" in r.stderr else 2)
    return json.loads(r.stdout), 0


def compile_sm90(fa4jit, mods, env, out, extra=(), kernels="fwd"):
    """`fa4jit compile` of the sm_90a programs `kernels` (default the forward) of mods (no cache,
    cubins into out, options extra): compile_json's (results, status)."""
    cmd = [fa4jit, "compile", "--arch", "sm_90a", "--path", "sm90", "--no-cache", "--json", "--quiet",
           "--kernels", kernels, "--out", out] + list(extra) + mods
    return compile_json(cmd, env)


def check_programs(results, label, registers):
    """Prints a line per program; returns how many failed (a failed compile, a register count
    other than `registers`, a spill, a stack frame or serialized wgmma)."""
    bad = 0
    for m in results:
        name = m.get("mod", "?").rsplit("/", 1)[-1]
        if not m.get("ok"):
            print(f"FAIL {label} {name}: {m.get('error', 'compile failed')}")
            bad += 1
            continue
        for p in m["programs"]:
            ok = (p["registers"] == registers and p["spill_stores"] == 0 and p["spill_loads"] == 0 and
                  p["stack_frame"] == 0 and p["wgmma_serialized"] == 0)
            print(f"{'ok  ' if ok else 'FAIL'} {label} {name} {p['name']}: {p['registers']} registers, "
                  f"spills {p['spill_stores']}/{p['spill_loads']}, stack {p['stack_frame']}, "
                  f"serialized {p['wgmma_serialized']}")
            bad += not ok
    return bad
