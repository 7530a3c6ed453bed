"""Figure 7b's curve job on fixed files: which records each point reads, and the pick rule."""

import re
from pathlib import Path

import pytest

from agon import io
from agon.evaluate import curves


def _recs(evaluation, bench, correct, ids=None):
    ids = ids or [f"p{i}" for i in range(len(correct))]
    return [{"id": i, "evaluation": evaluation, "model": "toy", "seed": 0, "benchmark": bench, "correct": c,
             "final_length": 3, "total_tokens": 6, "stages": [{"length": 3, "correct": c}] * 2}
            for i, c in zip(ids, correct)]


@pytest.fixture
def cell(tmp_path):
    problems = [{"id": f"p{i}", "prompt": f"q{i}", "answer": "1", "difficulty": 3} for i in range(6)]
    io.write_jsonl(tmp_path / "heldout.jsonl", problems)
    io.write_jsonl(tmp_path / "validation.jsonl", problems[:3])
    untrained, evals, train = tmp_path / "untrained", tmp_path / "eval", tmp_path / "train"
    io.write_jsonl(untrained / "zero_shot.heldout.jsonl", _recs("zero_shot", "heldout", [1, 0, 0, 0, 0, 1]))
    # validation prefers B->A; held-out would prefer A->B: the curve must follow validation
    io.write_jsonl(evals / "agon_ab.validation.jsonl", _recs("agon_ab", "validation", [0, 0, 1]))
    io.write_jsonl(evals / "agon_ba.validation.jsonl", _recs("agon_ba", "validation", [1, 1, 0]))
    io.write_jsonl(evals / "agon_ab.heldout.jsonl", _recs("agon_ab", "heldout", [1, 1, 1, 1, 1, 1]))
    io.write_jsonl(evals / "agon_ba.heldout.jsonl", _recs("agon_ba", "heldout", [1, 1, 0, 0, 1, 1]))
    io.write_json(train / "adapters" / "train_summary.json", {"steps": 6})
    io.write_json(train / "snapshots" / "snapshots.json", {"every": 2, "steps": [2, 4], "total_steps": 6})
    return {"row": "agon", "model": "toy", "seed": 0, "evaluation": None, "candidates": ["agon_ab", "agon_ba"],
            "select_on": "validation", "select_on_path": str(tmp_path / "validation.jsonl"),
            "evaluations": {"agon_ab": {"method": "agon", "protocol": "cascade", "policies": ["A", "B"]},
                            "agon_ba": {"method": "agon", "protocol": "cascade", "policies": ["B", "A"]}},
            "adapters": ["A", "B"], "benchmark": "heldout", "benchmark_path": str(tmp_path / "heldout.jsonl"),
            "problems": 4, "snapshots": str(train / "snapshots"), "adapter_dir": str(train / "adapters"),
            "eval_dir": str(evals), "step0": {"evaluation": "zero_shot", "eval_dir": str(untrained)},
            "sampling": {"temperature": 0.6, "top_p": 0.95, "max_new_tokens": 8}, "out": str(tmp_path / "curve.jsonl")}


def test_curve_points_and_direction(cell, monkeypatch):
    """One backend for every snapshot: built once, then pointed at each snapshot's adapters."""
    from agon.evaluate import protocols

    class Backend:
        def __init__(self, dirs):
            self.loaded, self.seeds, self.closed = [dict(dirs)], [], False

        def load_saved(self, dirs):
            self.loaded.append(dict(dirs))

        def sample(self, adapter, prompts, sampling, seed):
            self.seeds.append(seed)
            return [Path(self.loaded[-1][adapter]).parent.name for _ in prompts]  # "step<k>"

        def close(self):
            self.closed = True

    built = []

    def factory(spec, dirs, device):
        built.append(Backend(dirs))
        return built[-1], "fmt"

    def fake_run(protocol, policies, problems, sample, fmt, grader):
        assert (protocol, policies, fmt) == ("cascade", ["B", "A"], "fmt")    # the validation pick: B->A
        step = int(sample("B", ["x"], 0)[0].removeprefix("step"))
        return [{"id": p["id"], "correct": int(i < step // 2), "final_length": 5} for i, p in enumerate(problems)]

    monkeypatch.setattr(protocols, "run", fake_run)
    points = curves.run_curve(cell, log=lambda m: None, backend_factory=factory)
    assert [(p["step"], p["k"], p["n"], p["evaluation"]) for p in points] == [
        (0, 1, 4, "zero_shot"), (2, 1, 4, "agon_ba"), (4, 2, 4, "agon_ba"), (6, 2, 4, "agon_ba")]
    assert [p["source"] for p in points] == ["untrained base (zero_shot records)", "snapshot", "snapshot",
                                             "final adapters (evaluation records)"]
    assert all(p["selected"] == "agon_ba on validation" for p in points[1:])
    assert [r["id"] for r in points[-1]["records"]] == ["p0", "p1", "p2", "p3"]      # the subset only
    snap = Path(cell["snapshots"])
    (backend,) = built                                   # one backend (one vLLM engine) for the job
    assert backend.loaded == [{a: str(snap / f"step{k}" / a) for a in ("A", "B")} for k in (2, 4)]
    assert backend.seeds[0] != backend.seeds[1]          # each snapshot samples with its own seed
    assert backend.closed
    assert io.read_jsonl(cell["out"]) == points
    loaded = curves.load_points([cell["out"]])
    assert [(p["method"], p["step"], p["k"]) for p in loaded] == [("agon", 0, 1), ("agon", 2, 1), ("agon", 4, 2),
                                                                ("agon", 6, 2)]


def test_curve_pick_never_reads_heldout(cell):
    Path(cell["eval_dir"], "agon_ab.heldout.jsonl").unlink()   # the non-chosen direction's held-out
    assert curves.choose_evaluation(cell) == ("agon_ba", "agon_ba on validation")
    Path(cell["eval_dir"], "agon_ba.validation.jsonl").unlink()
    with pytest.raises(FileNotFoundError):
        curves.choose_evaluation(cell)


def test_a_pick_left_to_a_tie_says_so_as_the_tables_do(cell):
    from agon.evaluate.records import TIE

    io.write_jsonl(Path(cell["eval_dir"]) / "agon_ab.validation.jsonl", _recs("agon_ab", "validation", [1, 0, 1]))
    assert curves.choose_evaluation(cell) == ("agon_ab", "agon_ab on validation" + TIE)


def test_curve_subset_checks(cell):
    with pytest.raises(ValueError, match="asks for 9 problems but the benchmark split has 6"):
        curves.run_curve({**cell, "problems": 9}, backend_factory=lambda *a: ("s", "f"))
    with pytest.raises(ValueError, match="no records for 1 subset problem"):
        curves.restrict(_recs("x", "heldout", [1]), ["p0", "p7"], "x")


def test_a_damaged_records_file_stops_the_curve_naming_it(cell):
    final = Path(cell["eval_dir"], "agon_ba.heldout.jsonl")
    final.write_text("".join(final.read_text().splitlines(keepends=True)[1:]))  # p0's record lost
    with pytest.raises(ValueError, match=rf"{final}: 1 problem\(s\) of its split \(6\) missing, first 'p0'"):
        curves.run_curve(cell, log=lambda m: None, backend_factory=lambda *a: ("s", "f"))


def test_a_damaged_curve_file_stops_the_figure_named(tmp_path):
    def pt(step, k, source="snapshot", seed=0):
        return {"row": "agon", "model": "toy", "seed": seed, "step": step, "k": k, "n": 2, "evaluation": "agon_ab",
                "source": source, "selected": "", "records": [{"id": "p0", "correct": int(k > 0), "final_length": 5},
                                                              {"id": "p1", "correct": int(k > 1), "final_length": 5}]}

    path = tmp_path / "seed0.jsonl"
    whole = [pt(0, 1, "untrained base (zero_shot records)"), pt(24, 1),
             pt(48, 2, "final adapters (evaluation records)")]
    io.write_jsonl(path, whole)
    assert [p["step"] for p in curves.load_points([str(path)])] == [0, 24, 48]
    for points, message in (
            (whole[:-1], "from step 0 to a 'snapshot' point"),                    # cut at a line boundary
            ([whole[0], {**whole[1], "k": 2}, whole[2]], "k 2 / n 2 is not what its 2 records count"),
            ([whole[0], {**whole[1], "seed": 1}, whole[2]], "a point of row 'agon', model 'toy', seed 1"),
            ([whole[0], whole[2], whole[1]], "step 24 after step 48"),
            ([whole[0], {**whole[1], "records": [{"id": "p0", "correct": "yes"}] * 2}, whole[2]],
             "k 1 / n 2 is not what its 2 records count")):
        io.write_jsonl(path, points)
        with pytest.raises(ValueError, match=re.escape(message)):
            curves.load_points([str(path)])
    path.write_text("")
    with pytest.raises(ValueError, match="empty curve file"):
        curves.load_points([str(path)])


def test_a_curve_that_lost_a_middle_snapshot_is_caught_against_its_cells_snapshots(tmp_path):
    def pt(step, source="snapshot"):
        return {"row": "grpo", "model": "toy", "seed": 0, "step": step, "k": 1, "n": 2, "evaluation": "grpo",
                "source": source}

    snaps = tmp_path / "snapshots"
    io.write_json(snaps / "snapshots.json", {"every": 24, "steps": [24, 48, 72], "total_steps": 96})
    assert curves.expected_steps(snaps) == [0, 24, 48, 72, 96]
    path = str(tmp_path / "seed0.jsonl")
    first, last = pt(0, "untrained base (zero_shot records)"), pt(96, "final adapters (evaluation records)")
    io.write_jsonl(path, [first, pt(24), pt(48), pt(72), last])
    assert [p["step"] for p in curves.load_points([path], {path: str(snaps)})] == [0, 24, 48, 72, 96]
    io.write_jsonl(path, [first, pt(24), pt(72), last])  # step 48's line lost: still 0 to the end, rising
    assert len(curves.load_points([path])) == 4  # unseen without the cell's snapshots
    with pytest.raises(ValueError, match=re.escape(f"{path}: steps [0, 24, 72, 96], but its cell's snapshots "
                                                   "give [0, 24, 48, 72, 96] (missing [48])")):
        curves.load_points([path], {path: str(snaps)})
    with pytest.raises(ValueError, match="no snapshots directory given"):
        curves.load_points([path], {})


def test_a_curve_point_of_the_wrong_type_is_named_not_a_traceback(tmp_path):
    path = tmp_path / "seed0.jsonl"
    base = {"row": "agon", "model": "toy", "seed": 0, "k": 0, "n": 0, "evaluation": "e", "selected": ""}
    io.write_jsonl(path, [{**base, "step": "0", "source": "untrained base"},
                          {**base, "step": 4, "source": "final adapters (evaluation records)"}])
    with pytest.raises(ValueError, match=re.escape(f"{path}:1: step '0' (steps are integers rising from 0)")):
        curves.load_points([str(path)])
    io.write_jsonl(path, [{**base, "step": 0, "source": "untrained base", "records": "p0"},
                          {**base, "step": 4, "source": "final adapters (evaluation records)"}])
    with pytest.raises(ValueError, match=re.escape(f"{path}:1: step 0: k 0 / n 0 is not what its")):
        curves.load_points([str(path)])
