"""Finding and loading libfa4jit with ctypes.

Search order (the first that exists wins; a path that is named but cannot be loaded is an error,
never silently skipped):
  1. FA4JIT_LIBRARY: the path of the shared library.
  2. The package's own lib/ directory (a wheel built with the library inside).
  3. A build tree of the source checkout the package sits in: <repo>/build*/libfa4jit.so, the most
     recently built first.
  4. The system's dynamic loader search path ("libfa4jit.so.0", then "libfa4jit.so").
The library is loaded once per process; every prototype of _ctypes.PROTOTYPES is applied to it.
"""

import ctypes
import glob
import os
import threading

from . import _ctypes as C
from .errors import LibraryNotFoundError

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
# python/fa4jit -> python -> repository root, when running from a source checkout.
_REPO_DIR = os.path.dirname(os.path.dirname(_PKG_DIR))

_lock = threading.Lock()
_lib = None
_lib_path = None


def repo_dir():
    """The source checkout this package sits in, or None when installed elsewhere."""
    if os.path.isfile(os.path.join(_REPO_DIR, "include", "fa4jit.h")):
        return _REPO_DIR
    return None


def candidates():
    """Every place searched, in order, as (origin, path) pairs; paths may not exist."""
    out = []
    env = os.environ.get("FA4JIT_LIBRARY")
    if env:
        out.append(("FA4JIT_LIBRARY", env))
    pkg = sorted(glob.glob(os.path.join(_PKG_DIR, "lib", "libfa4jit.so*")), key=len)
    out.extend(("package lib/", p) for p in pkg)
    root = repo_dir()
    if root is not None:
        builds = glob.glob(os.path.join(root, "build*", "libfa4jit.so"))
        builds.sort(key=lambda p: os.path.getmtime(p), reverse=True)
        out.extend(("build tree", p) for p in builds)
    out.append(("system loader", "libfa4jit.so.0"))
    out.append(("system loader", "libfa4jit.so"))
    return out


def _try_load(origin, path):
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        if origin in ("FA4JIT_LIBRARY", "package lib/"):
            raise LibraryNotFoundError(f"libfa4jit from {origin} ({path}) could not be loaded: {e}")
        return None


def _apply_prototypes(lib):
    for name, (restype, argtypes) in C.PROTOTYPES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise LibraryNotFoundError(
                f"the loaded libfa4jit ({_lib_path}) lacks the symbol {name}; "
                "it is older or newer than this binding")
        fn.restype = restype
        fn.argtypes = argtypes
    for name, (restype, argtypes) in C.OPTIONAL_PROTOTYPES.items():
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.restype = restype
            fn.argtypes = argtypes


def has(name):
    """Whether the loaded library exports an optional symbol (C.OPTIONAL_PROTOTYPES)."""
    return getattr(load(), name, None) is not None


def load():
    """The loaded library (a ctypes.CDLL with prototypes). Raises LibraryNotFoundError."""
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for origin, path in candidates():
            if origin != "system loader" and not os.path.exists(path):
                if origin == "FA4JIT_LIBRARY":
                    raise LibraryNotFoundError(f"FA4JIT_LIBRARY names {path}, which does not exist")
                continue
            tried.append(path)
            lib = _try_load(origin, path)
            if lib is None:
                continue
            _lib_path = path
            _apply_prototypes(lib)
            got = lib.fa4_version_number()
            if got // 100 != C.VERSION_NUMBER // 100:
                raise LibraryNotFoundError(
                    f"libfa4jit at {path} is version {lib.fa4_version_string().decode()} "
                    f"({got}); this binding mirrors the header of version "
                    f"{C.VERSION_MAJOR}.{C.VERSION_MINOR}.x")
            _lib = lib
            return lib
        raise LibraryNotFoundError(
            "libfa4jit not found; set FA4JIT_LIBRARY to its path, install a wheel that carries it, "
            "or build it (cmake -B build && cmake --build build). Tried: " + ", ".join(tried))


def path():
    """Path of the loaded library (loads it if needed)."""
    load()
    return _lib_path


def status_name(status):
    lib = load()
    return lib.fa4_status_name(int(status)).decode()


def status_message(status):
    lib = load()
    return lib.fa4_status_message(int(status)).decode()
