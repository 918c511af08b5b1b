"""Shared fixtures of the Python tests: the package from this checkout, the library, skips.

The tests import fa4jit from python/ of this checkout (no install needed). The library is found
as the package finds it (FA4JIT_LIBRARY, python/fa4jit/lib, build*/ of the checkout); tests that
need it skip with the reason when it cannot be loaded, and so do tests that need torch or a GPU.
"""

import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "mods"))  # mods/twins.py, the shipped mods' PyTorch twins


@pytest.fixture(scope="session")
def repo():
    return REPO


@pytest.fixture(scope="session")
def lib():
    """The loaded library, or a skip naming why it could not be loaded."""
    from fa4jit import _lib
    from fa4jit.errors import LibraryNotFoundError
    try:
        return _lib.load()
    except LibraryNotFoundError as e:
        if os.environ.get("FA4JIT_LIBRARY"):
            # A library named explicitly (as CI does) that does not load is a failure.
            pytest.fail(f"FA4JIT_LIBRARY is set but the library does not load: {e}")
        pytest.skip(f"libfa4jit not available: {e}")


@pytest.fixture()
def isolated_cache(tmp_path, lib):
    """A private cache directory for the contexts fa4jit creates during one test."""
    import fa4jit
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    fa4jit.configure_cache(dir=str(cache), mode="rw")
    yield str(cache)
    fa4jit.configure_cache()
