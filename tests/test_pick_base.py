"""scripts/pick_base.py: the rule that picks a pinned base from candidates' untrained Table 0 rows."""

import csv
import importlib.util
from pathlib import Path

SPEC = importlib.util.spec_from_file_location("pick_base", Path(__file__).resolve().parents[1] / "scripts" / "pick_base.py")
pick = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(pick)

FIELDS = ["section", "quantity", "value", "target", "meets"]


def table(path: Path, solo: float, wrong: float, gain: float, overlap: float) -> Path:
    rows = [
        {"section": "1", "quantity": "after reading a wrong draft's summary", "value": wrong,
         "target": "0.40 - 0.90x the independent sample (0.080 - 0.180)", "meets": "yes" if 0.08 <= wrong <= 0.18 else "no"},
        {"section": "1", "quantity": "alone on the problems whose draft was wrong", "value": 0.2, "target": "", "meets": ""},
        {"section": "2", "quantity": "zero_shot (the base alone)", "value": solo, "target": "0.25 - 0.45",
         "meets": "yes" if 0.25 <= solo <= 0.45 else "no"},
        {"section": "2", "quantity": "moa (untrained mixture)", "value": 0.5,
         "target": f"zero_shot +0.05 to +0.15 (gain {gain:+.3f})", "meets": "yes" if 0.05 <= gain <= 0.15 else "no"},
        {"section": "3", "quantity": "failure overlap", "value": overlap,
         "target": ">= 0.55, interval above independence (0.450)", "meets": "yes" if overlap >= 0.55 else "no"},
        {"section": "7 RL learned", "quantity": "grpo", "value": 0.1, "target": "rises", "meets": "no"},
    ]
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_most_targets_met_wins_then_the_smallest_distance_from_the_ranges_middles(tmp_path, capsys):
    a = table(tmp_path / "a.csv", solo=0.35, wrong=0.13, gain=0.10, overlap=0.60)   # 4 met, each in the middle
    b = table(tmp_path / "b.csv", solo=0.44, wrong=0.17, gain=0.06, overlap=0.56)   # 4 met, near the edges
    c = table(tmp_path / "c.csv", solo=0.50, wrong=0.13, gain=0.10, overlap=0.60)   # 3 met
    assert pick.score(a)[:1] == (4,) and pick.score(a)[2] == 4          # section 7 never counts
    assert pick.score(a)[1] < pick.score(b)[1]
    assert pick.distance({"target": "0.25 - 0.45", "value": "0.35"}, []) == 0.0
    assert pick.distance({"target": ">= 0.55, interval above independence (0.4)", "value": "0.50"}, []) \
        == 0.55 - 0.50
    pick.main([str(c), str(b), str(a)])
    assert [line.split(": ")[-1] for line in capsys.readouterr().out.splitlines()] == [str(a), str(b), str(c)]
