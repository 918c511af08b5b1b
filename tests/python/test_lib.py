"""Finding and loading libfa4jit, and what the loaded library says about itself."""

import os
import subprocess
import sys


from fa4jit import _ctypes as C
from fa4jit import _lib


def _run_python(code, env_extra, repo):
    env = dict(os.environ)
    env.update(env_extra)
    env["PYTHONPATH"] = os.path.join(repo, "python")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


def test_missing_library_path_is_a_clear_error(repo, tmp_path):
    missing = str(tmp_path / "nope" / "libfa4jit.so")
    r = _run_python("import fa4jit\n"
                    "try:\n    fa4jit.library_path()\n"
                    "except fa4jit.LibraryNotFoundError as e:\n    print('ERR', e)\n",
                    {"FA4JIT_LIBRARY": missing}, repo)
    assert r.returncode == 0, r.stderr
    assert "ERR" in r.stdout and missing in r.stdout and "does not exist" in r.stdout


def test_unloadable_library_is_a_clear_error(repo, tmp_path):
    bogus = tmp_path / "libfa4jit.so"
    bogus.write_text("not an ELF file")
    r = _run_python("import fa4jit\n"
                    "try:\n    fa4jit.library_path()\n"
                    "except fa4jit.LibraryNotFoundError as e:\n    print('ERR', e)\n",
                    {"FA4JIT_LIBRARY": str(bogus)}, repo)
    assert r.returncode == 0, r.stderr
    assert "ERR" in r.stdout and "could not be loaded" in r.stdout


def test_import_needs_neither_torch_nor_library(repo, tmp_path):
    r = _run_python("import sys, fa4jit\nprint('torch' in sys.modules and 'x' or 'ok')\n",
                    {"FA4JIT_LIBRARY": str(tmp_path / "absent.so")}, repo)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() in ("ok", "x")  # torch may be imported when installed


def test_search_order_lists_the_environment_first(monkeypatch, tmp_path):
    monkeypatch.setenv("FA4JIT_LIBRARY", str(tmp_path / "x.so"))
    origins = [o for o, _ in _lib.candidates()]
    assert origins[0] == "FA4JIT_LIBRARY"
    assert origins[-1] == "system loader"


def test_version_matches_the_header(lib):
    assert lib.fa4_version_number() // 100 == C.VERSION_NUMBER // 100
    assert lib.fa4_version_string().decode().count(".") == 2


def test_status_names_agree_with_the_library(lib):
    for num, name in enumerate(C.STATUS_NAMES):
        assert lib.fa4_status_name(num).decode() == name
        assert lib.fa4_status_message(num)  # never NULL
    assert lib.fa4_status_name(len(C.STATUS_NAMES)).decode() == "FA4_UNKNOWN_STATUS"


def test_dtype_names(lib):
    from fa4jit._core import DTYPE_BY_NAME, dtype_name
    assert dtype_name(C.FA4_DTYPE_BF16) == "bf16"
    for name in ("bf16", "fp16", "int32", "bool"):
        assert DTYPE_BY_NAME[name] >= 1
    assert lib.fa4_dtype_size(C.FA4_DTYPE_INT64) == 8


def test_every_error_family_has_a_class():
    from fa4jit import errors
    for name in C.STATUS_NAMES[1:]:
        cls = errors.error_class(name)
        assert issubclass(cls, errors.Fa4Error) and cls is not errors.Fa4Error, name
    assert issubclass(errors.error_class("FA4_ERR_MOD_CHECK"), errors.ModError)
    assert issubclass(errors.error_class("FA4_ERR_UNSUPPORTED"), errors.UnsupportedError)
    assert issubclass(errors.error_class("FA4_ERR_SHAPE"), ValueError)
