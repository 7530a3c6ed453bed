"""scripts/grpo_probe.py's count of how the toy base searches (docs/measurements-archive.md quotes it)."""

import importlib.util
from pathlib import Path

from agon.config import load
from agon.data import toy_math

HABIT = load(Path(__file__).resolve().parents[1] / "config" / "search.yaml")["tables"]["table0_preconditions"]["habit"]

SPEC = importlib.util.spec_from_file_location("grpo_probe", Path(__file__).resolve().parents[1] / "scripts" / "grpo_probe.py")
probe = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(probe)


def test_search_habits_counts_first_tries_repeats_and_slips():
    search = toy_math.Search.parse("7*?+3=45")
    problems = [{"prompt": search.prompt, "answer": "6", "difficulty": toy_math.SEARCH_LEVEL}] * 5 + [
        {"prompt": "2+3=?", "answer": "5", "difficulty": 1}]  # not a search: not counted
    texts = [
        f"<think>{search.check(6)}</think>{search.claim(6)}<answer>6</answer>",              # first try right
        f"<think>{search.check(5)} no;{search.check(5)} no;7*4=29,29+3=32<45 no;",         # a repeat, a slip, cut
        f"<think>{search.check(2)} no;7*6=42,42+3=45=45</think>7*6+3=45 {search.check(9)}",  # after </think>: ignored
        f"<think>{search.check(5)} no+;{search.check(7)} no-;{search.check(6)}</think>{search.claim(6)}"
        "<answer>6</answer>",                                                             # bisects, right
        f"<think>{search.check(5)} no+;7*7=49,49+3=52<45 no+;{search.check(8)} no",        # a relation slip, cut
        "<think>2+3=5</think>",
    ]
    # the habit is Table 0's (a bisection: 5 first, no blind retraction): the 2nd text starts
    # with 5 but retracts blind
    assert probe.search_habits(problems, texts, HABIT["pattern"]) == (
        "first try is the answer in 1/5, a candidate tried twice in 1/5, a slip in 2/12 checks, "
        "shows the habit in 2/5 (right in 1)")
