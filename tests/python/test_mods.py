"""Shipped mods by name: where they are found and how their text is cached (no torch, no library
needed)."""

import os

from fa4jit import _mods


def test_mods_dir_from_the_environment_wins_and_text_follows_edits(tmp_path, monkeypatch):
    monkeypatch.setenv("FA4JIT_MODS_DIR", str(tmp_path))
    path = tmp_path / "my_test_mod.mod"
    path.write_text("bool mask_mod(int b, int h, int q_idx, int kv_idx) { return true; }\n")
    assert _mods.shipped_mods()["my_test_mod"] == str(path)
    first = _mods.shipped_mod_source("my_test_mod")
    assert "return true" in first

    scans = []
    real = _mods.shipped_mods
    monkeypatch.setattr(_mods, "shipped_mods", lambda: scans.append(1) or real())
    assert _mods.shipped_mod_source("my_test_mod") == first
    assert scans == []  # served from the cache: one stat, no directory scan

    path.write_text("bool mask_mod(int b, int h, int q_idx, int kv_idx) { return false; }\n")
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert "return false" in _mods.shipped_mod_source("my_test_mod")
    assert scans == [1]


def test_source_text_versus_names():
    assert _mods.is_source_text("float score_mod(float score, int b, int h, int q, int kv) {}")
    assert not _mods.is_source_text("alibi")
