"""Build hook for the fa4jit wheel: puts the shared library and the shipped mods into the package.

Nothing is written into the source tree: build_py copies, into its own build directory,
  - libfa4jit.so from FA4JIT_LIBRARY, else the newest ../build*/libfa4jit.so of the checkout,
    as fa4jit/lib/libfa4jit.so (a wheel without it still works with FA4JIT_LIBRARY at run time;
    set FA4JIT_WHEEL_REQUIRE_LIBRARY=1 to make a missing library an error);
  - ../mods/*.mod as fa4jit/mods/*.mod (the names fa4jit.flex_attention(score_mod="alibi") finds).
"""

import glob
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def _library():
    env = os.environ.get("FA4JIT_LIBRARY")
    if env:
        return env
    found = glob.glob(os.path.join(REPO, "build*", "libfa4jit.so"))
    found.sort(key=os.path.getmtime, reverse=True)
    return found[0] if found else None


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        pkg = os.path.join(self.build_lib, "fa4jit")
        lib = _library()
        if lib:
            os.makedirs(os.path.join(pkg, "lib"), exist_ok=True)
            # resolve symlinks (libfa4jit.so -> .so.0 -> .so.0.1.0): the wheel holds one file
            shutil.copyfile(os.path.realpath(lib), os.path.join(pkg, "lib", "libfa4jit.so"))
        elif os.environ.get("FA4JIT_WHEEL_REQUIRE_LIBRARY") == "1":
            raise SystemExit("fa4jit wheel: no libfa4jit.so (build it, or set FA4JIT_LIBRARY)")
        mods = sorted(glob.glob(os.path.join(REPO, "mods", "*.mod")))
        if mods:
            os.makedirs(os.path.join(pkg, "mods"), exist_ok=True)
            for m in mods:
                shutil.copyfile(m, os.path.join(pkg, "mods", os.path.basename(m)))


setup(cmdclass={"build_py": BuildWithLibrary})
