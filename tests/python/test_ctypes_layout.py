"""The ctypes mirrors in fa4jit._ctypes against include/fa4jit.h, as the C compiler lays it out.

A small C program is generated from the mirrors' field lists, compiled with the system C compiler
against the header, and run: it prints sizeof and alignof of every struct, offsetof and sizeof of
every field, and the value of every constant; each must equal what ctypes says. A field the
mirror has and the header lacks (or the reverse, through sizeof) fails to compile or to compare.
"""

import ctypes
import os
import shutil
import subprocess

import pytest

from fa4jit import _ctypes as C


def _program():
    lines = ["#include <stdio.h>", "#include <stddef.h>", "#include <stdalign.h>",
             '#include "fa4jit.h"', "int main(void) {"]
    for sname, cls in C.STRUCTS.items():
        lines.append(f'    printf("struct {sname} %zu %zu\\n", sizeof({sname}), '
                     f"alignof({sname}));")
        for fname, _ in cls._fields_:
            lines.append(f'    printf("field {sname}.{fname} %zu %zu\\n", '
                         f"offsetof({sname}, {fname}), sizeof((({sname} *)0)->{fname}));")
    for cname in C.CONSTANTS:
        lines.append(f'    printf("const {cname} %lld\\n", (long long)({cname}));')
    lines += ["    return 0;", "}"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def c_layout(tmp_path_factory, repo):
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc/gcc) to compile the layout probe")
    include = os.path.join(repo, "include")
    if not os.path.isfile(os.path.join(include, "fa4jit.h")):
        pytest.skip("include/fa4jit.h not found (not a source checkout)")
    d = tmp_path_factory.mktemp("layout")
    src, exe = d / "probe.c", d / "probe"
    src.write_text(_program())
    r = subprocess.run([cc, "-std=c11", "-Wall", "-Werror", "-I", include, str(src), "-o",
                        str(exe)], capture_output=True, text=True)
    assert r.returncode == 0, f"layout probe does not compile:\n{r.stderr}"
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    structs, fields, consts = {}, {}, {}
    for line in out.splitlines():
        kind, name, *nums = line.split()
        if kind == "struct":
            structs[name] = tuple(map(int, nums))
        elif kind == "field":
            fields[name] = tuple(map(int, nums))
        else:
            consts[name] = int(nums[0])
    return structs, fields, consts


@pytest.mark.parametrize("sname", sorted(C.STRUCTS))
def test_struct_size_and_alignment(c_layout, sname):
    structs, _, _ = c_layout
    cls = C.STRUCTS[sname]
    assert structs[sname] == (ctypes.sizeof(cls), ctypes.alignment(cls)), sname


@pytest.mark.parametrize("sname", sorted(C.STRUCTS))
def test_field_offsets_and_sizes(c_layout, sname):
    _, fields, _ = c_layout
    cls = C.STRUCTS[sname]
    for fname, ftype in cls._fields_:
        want = fields[f"{sname}.{fname}"]
        got = (getattr(cls, fname).offset, ctypes.sizeof(ftype))
        assert got == want, f"{sname}.{fname}: ctypes (offset, size) {got}, C {want}"


def test_fields_cover_the_struct(c_layout):
    """No trailing C field is missing from a mirror: the last field ends where C's struct ends
    (up to tail padding)."""
    structs, _, _ = c_layout
    for sname, cls in C.STRUCTS.items():
        last, ltype = cls._fields_[-1]
        end = getattr(cls, last).offset + ctypes.sizeof(ltype)
        size, align = structs[sname]
        assert size - end < align, f"{sname}: C has {size - end} bytes after {last}"


def test_constants(c_layout):
    _, _, consts = c_layout
    for name, value in C.CONSTANTS.items():
        assert consts[name] == value, f"{name}: binding {value}, header {consts[name]}"


def test_struct_size_helper_sets_struct_size():
    s = C.new(C.fa4_fwd_args)
    assert s.struct_size == ctypes.sizeof(C.fa4_fwd_args)
    t = C.new(C.fa4_tensor)  # no struct_size field: just zeroed
    assert t.ndim == 0
