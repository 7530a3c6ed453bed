from pathlib import Path

import pytest

from agon import io
from agon.cli import find_provenance


def test_finds_own_or_enclosing_provenance(tmp_path):
    run = tmp_path / "results" / "toy"
    cell = run / "eval" / "toy" / "agon" / "seed0"
    records = cell / "agon_ab.heldout.jsonl"
    io.write_jsonl(records, [{"id": "p0"}])
    io.write_json(cell / "provenance.json", {"provenance": {"git_commit": "abc", "seed": 0}})
    source, block = find_provenance(records)
    assert source == (cell / "provenance.json").resolve() and block["git_commit"] == "abc"
    # a json with its own block answers for itself
    own = run / "data" / "manifest.json"
    io.write_json(own, {"provenance": {"git_commit": "def"}})
    assert find_provenance(own)[1]["git_commit"] == "def"
    assert find_provenance(run / "data" / "heldout.jsonl")[1]["git_commit"] == "def"


def test_no_provenance_is_a_clear_error(tmp_path):
    (tmp_path / "results").mkdir()
    with pytest.raises(FileNotFoundError, match="no provenance found"):
        find_provenance(tmp_path / "results" / "x.jsonl")


def test_provenance_names_the_cpu():
    # a toy run's numbers differ between CPUs with and without native bf16 (docs/toy-world.md, "What still differs between CPUs")
    block = io.provenance({"x": 1}, seed=3)
    assert isinstance(block["cpu"], str) and block["seed"] == 3
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists() and "model name" in cpuinfo.read_text():
        assert block["cpu"] and block["cpu"] in cpuinfo.read_text()


def test_a_curve_file_answers_with_the_record_its_job_wrote_beside_it(tmp_path):
    """Curve files of several seeds share a folder: each has its own <name>.provenance.json."""
    from agon.jobs.curve import provenance_path

    folder = tmp_path / "results" / "toy" / "curves" / "toy" / "agon"
    for seed in (0, 1):
        points = folder / f"seed{seed}.jsonl"
        io.write_jsonl(points, [{"step": 0}])
        io.write_json(provenance_path(points), {"precision": "bf16", "provenance": {"seed": seed}})
    source, block = find_provenance(folder / "seed1.jsonl")
    assert source == (folder / "seed1.provenance.json").resolve() and block == {"seed": 1}
    assert find_provenance(folder / "seed0.provenance.json")[1] == {"seed": 0}
    # a record beside it without a provenance block: the search goes on up the folders
    io.write_json(provenance_path(folder / "seed1.jsonl"), {"precision": "bf16"})
    with pytest.raises(FileNotFoundError, match="no provenance found"):
        find_provenance(folder / "seed1.jsonl")
