"""Result files read back checked: a records file against its split, metrics against their steps."""

import json

import pytest

from agon import io
from agon.evaluate.records import check_steps, is_complete, read_records, read_steps

IDS = ["p1", "p2", "p3"]


def record(pid, correct=1):
    return {"id": pid, "correct": correct, "stages": [{"length": 3, "correct": correct}], "total_tokens": 3,
            "final_length": 3}


@pytest.fixture
def records_file(tmp_path):
    path = tmp_path / "zero_shot.heldout.jsonl"
    io.write_jsonl(path, [record(i) for i in IDS])
    return path


def lines(path):
    return path.read_text().splitlines(keepends=True)


def test_a_whole_file_reads(records_file):
    assert [r["id"] for r in read_records(records_file, IDS)] == IDS and is_complete(records_file, IDS)


def test_a_file_cut_mid_line_names_the_line(records_file):
    records_file.write_text(records_file.read_text()[:-10])
    with pytest.raises(ValueError, match=rf"{records_file}: the last line has no newline"):
        read_records(records_file, IDS)
    records_file.write_text(records_file.read_text() + "\n")
    with pytest.raises(ValueError, match=rf"{records_file}:3: not valid JSON"):
        read_records(records_file, IDS)
    assert not is_complete(records_file, IDS)


def test_a_deleted_line_names_the_first_missing_problem(records_file):
    records_file.write_text("".join(lines(records_file)[:1] + lines(records_file)[2:]))
    with pytest.raises(ValueError, match=rf"{records_file}: 1 problem\(s\) of its split \(3\) missing, first 'p2'"):
        read_records(records_file, IDS)


def test_a_duplicated_or_foreign_problem_names_its_line(records_file):
    records_file.write_text(records_file.read_text() + lines(records_file)[0])
    with pytest.raises(ValueError, match=rf"{records_file}:4: problem 'p1' again \(first at line 1\)"):
        read_records(records_file, IDS)
    io.write_jsonl(records_file, [record(i) for i in IDS + ["p9"]])
    with pytest.raises(ValueError, match=rf"{records_file}:4: problem 'p9' is not in its split"):
        read_records(records_file, IDS)


def test_a_record_must_count_what_it_claims(records_file):
    forged = [record(i) for i in IDS]
    forged[1]["correct"] = 1
    forged[1]["stages"][-1]["correct"] = 0  # a flipped verdict
    io.write_jsonl(records_file, forged)
    with pytest.raises(ValueError, match=rf"{records_file}:2: record of 'p2' does not count what it claims"):
        read_records(records_file, IDS)


def test_metrics_gaps_and_duplicates_name_the_step(tmp_path):
    path = tmp_path / "metrics.jsonl"
    io.write_jsonl(path, [{"step": s} for s in (0, 1, 2)])
    assert len(read_steps(path, 3)) == 3
    io.write_jsonl(path, [{"step": s} for s in (0, 2)])
    with pytest.raises(ValueError, match=rf"{path}:2: step 1 missing \(found step 2\)"):
        read_steps(path, 3)
    io.write_jsonl(path, [{"step": s} for s in (0, 1, 1, 2)])
    with pytest.raises(ValueError, match=rf"{path}:3: step 1 again"):
        read_steps(path, 3)
    with pytest.raises(ValueError, match=r"2 step\(s\) recorded, but the run made 3 \(step 2 missing\)"):
        check_steps(path, [{"step": 0}, {"step": 1}], 3)
