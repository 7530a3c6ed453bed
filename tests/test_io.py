"""Atomic writes: results as readable as the umask allows (never mkstemp's private 0600)."""

import os
import stat

import pytest

from agon import io


@pytest.fixture
def mask():
    old = os.umask(0o027)
    yield 0o027
    os.umask(old)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_umask_is_read_without_changing_it(mask):
    assert io.umask() == mask and io.umask() == mask


def test_atomic_writes_honour_the_umask(mask, tmp_path):
    io.write_json(tmp_path / "a.json", {"x": 1})
    io.write_jsonl(tmp_path / "b.jsonl", [{"x": 1}])
    io.write_csv(tmp_path / "c.csv", [{"x": 1}], ["x"])
    for name in ("a.json", "b.jsonl", "c.csv"):
        assert mode(tmp_path / name) == 0o640, name
    os.umask(0o002)
    io.write_text(tmp_path / "d.txt", "x")
    assert mode(tmp_path / "d.txt") == 0o664


def test_share_modes_opens_what_other_libraries_wrote_privately(mask, tmp_path):
    (tmp_path / "sub").mkdir(mode=0o700)
    private = tmp_path / "sub" / "model.safetensors"
    private.write_bytes(b"x")
    os.chmod(private, 0o600)
    io.share_modes(tmp_path)
    assert mode(private) == 0o640 and mode(tmp_path / "sub") == 0o750
