"""Result files read back checked: a records file against its split, metrics against their steps."""

import json
import re

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
    io.write_jsonl(path, [{"step": s, "streams": {}} for s in (0, 1, 2)])
    assert len(read_steps(path, 3)) == 3
    io.write_jsonl(path, [{"step": s, "streams": {}} for s in (0, 2)])
    with pytest.raises(ValueError, match=rf"{path}:2: step 1 missing \(found step 2\)"):
        read_steps(path, 3)
    io.write_jsonl(path, [{"step": s, "streams": {}} for s in (0, 1, 1, 2)])
    with pytest.raises(ValueError, match=rf"{path}:3: step 1 again"):
        read_steps(path, 3)
    with pytest.raises(ValueError, match=r"2 step\(s\) recorded, but the run made 3 \(step 2 missing\)"):
        check_steps(path, [{"step": 0}, {"step": 1}], 3)
    io.write_jsonl(path, [{"step": s, "streams": {}} for s in (0, 2, 1)])  # two steps swapped
    with pytest.raises(ValueError, match=rf"{path}:2: steps out of order: step 2 before step 1 \(line 3\)"):
        read_steps(path, 3)


@pytest.mark.parametrize("damage, message", [
    (lambda r: r["stages"][0].update(correct=2), "every stage needs `correct` 0 or 1"),
    (lambda r: r["stages"][0].update(correct="yes"), "every stage needs `correct` 0 or 1"),
    (lambda r: r["stages"][0].update(correct=None), "every stage needs `correct` 0 or 1"),
    (lambda r: r["stages"][0].update(length="3"), "a token `length`"),
    (lambda r: r["stages"][0].update(truncated="no"), "`truncated`, where present, true or false"),
    (lambda r: r["stages"][0].update(completion=None), "`completion` text"),
    (lambda r: r.update(final_length=999), "final_length 999, its final stage's"),
    (lambda r: r.pop("final_length"), "final_length None, its final stage's"),
    (lambda r: r.update(correct=True, stages=[{"length": 3, "correct": 0}]), "does not count what it claims"),
])
def test_every_stage_counts_what_a_table_reads_from_it(records_file, damage, message):
    # values a table would count (a 2 counted twice, "yes" or null as a right answer, a length
    # not the final stage's) stop the file, named, instead of moving a number
    forged = [record(i) for i in IDS]
    damage(forged[1])
    io.write_jsonl(records_file, forged)
    with pytest.raises(ValueError, match=rf"{records_file}:2: record of 'p2'.*{re.escape(message)}"):
        read_records(records_file, IDS)


def test_an_empty_line_or_a_line_not_an_object_is_named(records_file):
    records_file.write_text(lines(records_file)[0] + "\n" + "".join(lines(records_file)[1:]))
    with pytest.raises(ValueError, match=rf"{records_file}:2: an empty line"):
        read_records(records_file, IDS)
    records_file.write_text(lines(records_file)[0] + "[1, 2]\n" + "".join(lines(records_file)[2:]))
    with pytest.raises(ValueError, match=rf"{records_file}:2: a JSON object expected, found list"):
        read_records(records_file, IDS)


def test_every_record_names_the_file_it_is_read_as(tmp_path):
    from agon.evaluate.records import index_records

    split = tmp_path / "heldout.jsonl"
    io.write_jsonl(split, [{"id": i} for i in IDS])
    path = tmp_path / "seed0" / "agon_ab.heldout.jsonl"   # the workflow's layout: the seed in the path too
    keyed = [{**record(i), "model": "toy", "evaluation": "agon_ab", "seed": 0, "benchmark": "heldout"} for i in IDS]
    io.write_jsonl(path, keyed)
    assert list(index_records([str(path)], {"heldout": str(split)})) == [("toy", "agon_ab", 0, "heldout")]
    for field, value, line in (("evaluation", "agon_ba", 3), ("seed", 1, 3), ("seed", "0", 3),
                               ("benchmark", "validation", 3), ("seed", 1, 1)):
        bad = [dict(r) for r in keyed]
        for r in bad[line - 1:] if line == 1 else [bad[line - 1]]:  # line 1: every record says it
            r[field] = value
        io.write_jsonl(path, bad)
        named = rf"{path}:{line}: record of '{bad[line - 1]['id']}' names .*{field} {value!r}"
        with pytest.raises(ValueError, match=named):
            index_records([str(path)], {"heldout": str(split)})


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_metrics_must_hold_finite_numbers(tmp_path, bad):
    path = tmp_path / "metrics.jsonl"
    # a diagnostic may be NaN (a figure draws a gap); a number a table counts may not
    io.write_jsonl(path, [{"step": 0, "streams": {"policy:A": {"reward": 1.0, "update_kl": float("nan")}}},
                          {"step": 1, "streams": {"policy:A": {"reward": bad, "conversion_rate": None}}}])
    with pytest.raises(ValueError, match=rf"{path}:2: step 1: streams.policy:A.reward \({bad!r}\) is not a finite"):
        read_steps(path, 2)


def test_a_json_file_that_does_not_parse_is_named(tmp_path):
    path = tmp_path / "provenance.json"
    path.write_text('{"provenance": {"base":\n')
    with pytest.raises(ValueError, match=rf"{path}:2: not valid JSON"):
        io.read_json(path)


def test_a_damaged_split_is_named_not_its_records(tmp_path):
    from agon.evaluate.records import split_ids

    split = tmp_path / "heldout.jsonl"
    io.write_jsonl(split, [{"id": "p1"}, {"id": "p2"}, {"id": "p1"}])
    with pytest.raises(ValueError, match=rf"{split}:3: problem 'p1' again \(first at line 1\): the split is damaged"):
        split_ids(split)
    io.write_jsonl(split, [{"id": "p1"}, {"prompt": "x"}])
    with pytest.raises(ValueError, match=rf"{split}:2: a problem without an id"):
        split_ids(split)


@pytest.mark.parametrize("stats, named", [({"reward": None}, "streams.policy:A.reward (None)"),
                                          ({"pass_rate": "0.5"}, "streams.policy:A.pass_rate ('0.5')"),
                                          ({"reward": True}, "streams.policy:A.reward (True)")])
def test_a_stream_measures_its_step_in_numbers(tmp_path, stats, named):
    path = tmp_path / "metrics.jsonl"
    io.write_jsonl(path, [{"step": 0, "streams": {"policy:A": {"reward": 1.0, "pass_rate": 0.5}}},
                          {"step": 1, "streams": {"policy:A": {"reward": 1.0, "pass_rate": 0.5, **stats}}}])
    with pytest.raises(ValueError, match=rf"{path}:2: step 1: {re.escape(named)} is not a finite number"):
        read_steps(path, 2)
    io.write_jsonl(path, [{"step": 0, "streams": None}])
    with pytest.raises(ValueError, match=rf"{path}:1: step 0: `streams` must map"):
        read_steps(path, 1)


def test_a_split_that_is_not_what_its_prepare_job_wrote_is_named(tmp_path):
    from agon.data.splits import split_hash
    from agon.evaluate.records import split_ids

    split = tmp_path / "heldout.jsonl"
    problems = [{"id": "p1", "answer": "1"}, {"id": "p2", "answer": "2"}]
    io.write_jsonl(split, problems)
    io.write_json(tmp_path / "manifest.json", {"splits": {"heldout": {"count": 2, "hash": split_hash(problems)}}})
    assert split_ids(split) == ["p1", "p2"]
    io.write_jsonl(split, problems[:1])   # a problem dropped from the split, not from its records
    with pytest.raises(ValueError, match=rf"{split}: its content is not what its prepare job wrote"):
        split_ids(split)
