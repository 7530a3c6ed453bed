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


@pytest.fixture
def small_disk(tmp_path):
    """A 256 KiB tmpfs (root only: CI runs as root)."""
    import subprocess

    if os.geteuid() != 0:
        pytest.skip("mounting a size-limited tmpfs needs root (CI runs as root)")
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_a_full_disk_names_the_file_and_leaves_nothing_half_written(small_disk):
    io.write_text(small_disk / "kept.txt", "an earlier result\n")
    with pytest.raises(io.DiskFull) as e:
        io.write_text(small_disk / "big.txt", "x" * (1 << 20))
    message = e.value.strerror
    assert f"no space left writing {small_disk / 'big.txt'}" in message and "bytes are free" in message
    assert "bytes written of it" in message and e.value.filename == str(small_disk / "big.txt")
    assert sorted(p.name for p in small_disk.iterdir()) == ["kept.txt"]  # no temporary file left
    assert (small_disk / "kept.txt").read_text() == "an earlier result\n"


def test_a_full_disk_in_a_directory_output_removes_it_whole(small_disk):
    out = small_disk / "adapters"
    with pytest.raises(io.DiskFull, match=f"no space left writing {out}"):
        with io.atomic_dir(out) as tmp:
            (tmp / "a.bin").write_bytes(b"x" * (64 << 10))
            (tmp / "b.bin").write_bytes(b"x" * (1 << 20))
    assert list(small_disk.iterdir()) == []
    with io.atomic_dir(out) as tmp:  # after the failure, space is back: a complete directory appears
        (tmp / "a.bin").write_bytes(b"x" * (64 << 10))
    assert [p.name for p in out.iterdir()] == ["a.bin"]


def test_the_cli_reports_a_full_disk_with_the_jobs_output(small_disk, capsys):
    """A library's own write (here the split files of `prepare`) fails with the path and the space left."""
    from agon.cli import EXIT_DISK_FULL, main

    spec = '{"name": "toy_math", "source": "toy_math", "seed": 1, "heldout": 3000, "validation": 0, ' \
           '"train": 0, "options": {"pool_size": 3000}}'
    with pytest.raises(SystemExit) as e:
        main(["prepare", "--spec", spec, "--out", str(small_disk / "data")])
    assert e.value.code == EXIT_DISK_FULL
    err = capsys.readouterr().err
    assert "agon prepare: error: no space left writing" in err and "bytes are free" in err, err
    assert not list((small_disk / "data").glob("*.jsonl"))
