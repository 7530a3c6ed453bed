"""The toy code domain: generated tasks, their tests and SFT data (grading: tests/test_code_grading.py)."""

from __future__ import annotations

import collections
import contextlib
import io
import random

import pytest

from agon import prompts
from agon.data import check_problem, toy_code, toy_math
from agon.data.sources import load_source
from agon.toy import sft_code
from agon.verify.sandbox import normalize_output


def run_in_process(program: str, stdin: str) -> str:
    """Our own reference programs only (trusted): stdout for `stdin`."""
    lines = iter(stdin.splitlines())
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(program, {"input": lambda: next(lines)})  # noqa: S102 - generated reference code
    return out.getvalue()


def passes_in_process(program: str, tests: list[dict]) -> bool:
    return all(normalize_output(run_in_process(program, t["input"])) == normalize_output(t["output"])
               for t in tests)


# --- generator -----------------------------------------------------------------

def test_deterministic_in_seed():
    assert toy_code.generate(200, 3) == toy_code.generate(200, 3)
    assert toy_code.generate(200, 3) != toy_code.generate(200, 4)
    assert list(zip(range(50), toy_code.stream(5))) == list(zip(range(50), toy_code.stream(5)))


def test_schema_levels_and_distinct():
    pool = toy_code.generate(400, 11)
    assert len({p["prompt"] for p in pool}) == len({p["id"] for p in pool}) == 400
    assert collections.Counter(p["difficulty"] for p in pool).keys() == {1, 2, 3, 4}
    for p in pool:
        check_problem(p, "test")
        assert p["source"] == "toy_code" and "answer" not in p
        assert len(p["tests"]) == toy_code.N_TESTS
        assert len({t["input"] for t in p["tests"]}) == toy_code.N_TESTS
        task = toy_code.parse(p["prompt"])
        assert task.spec == p["prompt"] and task.level == p["difficulty"]
    only = toy_code.generate(60, 2, levels=[3, 4])
    assert {p["difficulty"] for p in only} == {3, 4}
    with pytest.raises(ValueError, match="unknown difficulty level"):
        toy_code.generate(5, 0, levels=[5])
    with pytest.raises(ValueError, match="could not draw"):
        toy_code.generate(200, 0, levels=[1])  # level 1 has 144 distinct specs


def test_levels_compose_more_parts():
    examples = {
        "n:3n+1": (1, ("3*n+1",), "n=int(input())\nprint(3*n+1)"),
        "a,b:3a-2b": (2, ("3*a-2*b",), "a,b=map(int,input().split())\nprint(3*a-2*b)"),
        "xs:max 3x+1": (3, ("3*x+1", "max"), "print(max(3*x+1 for x in map(int,input().split())))"),
        "xs:sum 3x-1 if x>4": (4, ("x>4", "3*x-1"),
                               "print(sum(3*x-1 for x in map(int,input().split()) if x>4))"),
        "xs:sum 2x+5 if even": (4, ("x%2==0", "2*x+5"),
                                "print(sum(2*x+5 for x in map(int,input().split()) if x%2==0))"),
    }
    for spec, (level, steps, program) in examples.items():
        task = toy_code.parse(spec)
        assert (task.level, task.steps, task.program) == (level, steps, program)
    assert toy_code.parse("xs:sum 3x-1 if x>4").expected([4, 5, 6]) == 14 + 17
    assert toy_code.parse("a,b:3a-2b").expected([1, 5]) == -7
    with pytest.raises(ValueError, match="cannot parse"):
        toy_code.parse("n:3n*1")


def test_tests_hold_the_condition_boundary():
    for p in toy_code.generate(300, 8, levels=[4]):
        task = toy_code.parse(p["prompt"])
        if task.cond[0] in "<>":
            assert str(int(task.cond[1:])) in p["tests"][0]["input"].split()


def test_reference_programs_pass_and_slips_fail_in_process():
    """Every reference program of a large pool passes its tests; a slipped plan's program mostly fails."""
    rng = random.Random(0)
    caught = total = 0
    for p in toy_code.generate(800, 21):
        task = toy_code.parse(p["prompt"])
        assert passes_in_process(task.program, p["tests"]), p
        wrong = sft_code.attempt_steps(task, rng.randrange(len(task.steps)), rng)
        assert wrong != list(task.steps)
        total += 1
        caught += not passes_in_process(toy_code.program_of(task.level, wrong), p["tests"])
    assert caught / total > 0.9, f"tests catch only {caught}/{total} single-step slips"


def test_source_registry_and_options():
    counts = {}
    pool = load_source("toy_code", {"seed": 3, "pool_size": 50, "levels": [1, 2]}, counts)
    assert len(pool) == counts["generated"] == 50 and {p["difficulty"] for p in pool} == {1, 2}
    assert pool == toy_code.load({"seed": 3, "pool_size": 50, "levels": [1, 2]})
    with pytest.raises(ValueError, match="unknown option"):
        toy_code.load({"seed": 0, "pool_size": 5, "size": 3})
    with pytest.raises(ValueError, match="pool_size is required"):
        toy_code.load({"seed": 0})


# --- supervised data -----------------------------------------------------------

def _text(pieces):
    return "".join(t for t, _ in pieces)


def test_sft_examples_have_the_paper_shape():
    rng = random.Random(1)
    seen = collections.Counter()
    for p in toy_code.generate(300, 5):
        task = toy_code.parse(p["prompt"])
        prompt, pieces = sft_code.example(p, rng, attempt_prob=0.4, attempt_wrong_prob=0.5, false_start_prob=0.3)
        text = _text(pieces)
        assert prompts.format_ok(text), text
        assert prompts.extract_answer(text) == task.program
        assert prompts.summary(text) == ",".join(task.steps)
        untrained = [t for t, trained in pieces if not trained]
        assert text.count(" no") == len(untrained) <= len(task.steps)
        # only a wrong fragment is ever untrained, and it is retracted right after
        for w in untrained:
            assert w not in task.steps and f"{w} no" in text
        if "\nR: " in prompt:
            attempt = prompt.split("\nR: ")[1].rstrip("\n").split(",")
            seen["attempt_wrong" if attempt != list(task.steps) else "attempt_right"] += 1
            assert [w for w in untrained] == [a for a, s in zip(attempt, task.steps) if a != s]
        else:
            assert prompt == prompts.toy_plain(p["prompt"])
            seen["false_start" if untrained else "plain"] += 1
    assert min(seen[k] for k in ("attempt_wrong", "attempt_right", "false_start", "plain")) > 10, seen


def test_corrupt_step_changes_one_thing():
    rng = random.Random(2)
    for step in ("3*n+1", "3*a-2*b", "max", "x>4", "x%2==0", "x%2==1", "9*x-9"):
        wrongs = {sft_code.corrupt_step(step, rng) for _ in range(40)}
        assert step not in wrongs and all(len(w) - len(step) in (0, 1) for w in wrongs)
    assert "x<=4" in {sft_code.corrupt_step("x<4", rng) for _ in range(40)}  # a rival may show the habit


def test_bug_habit_is_a_trained_level4_condition_that_fails_the_tests():
    assert [sft_code.bug(s) for s in ("x<4", "x>7", "x%2==0", "x%2==1")] == ["x<=4", "x>=7", "x%2==1", "x%2==0"]
    with pytest.raises(ValueError):
        sft_code.bug("3*x+1")
    rng = random.Random(3)
    caught = 0
    pool = toy_code.generate(120, 6, levels=[4])
    for p in pool:
        prompt, pieces = sft_code.example(p, rng, attempt_prob=0.0, attempt_wrong_prob=0.0, false_start_prob=0.0,
                                          bug_prob=1.0)
        text = _text(pieces)
        assert all(trained for _, trained in pieces) and prompts.format_ok(text)
        task = toy_code.parse(p["prompt"])
        program = prompts.extract_answer(text)
        assert program == toy_code.program_of(4, [sft_code.bug(task.steps[0]), task.steps[1]])
        caught += not passes_in_process(program, p["tests"])
    assert caught / len(pool) > 0.9  # the boundary test catches the non-strict comparison
    # other levels never carry it, and bug_prob 0 draws nothing extra from the rng
    for p in toy_code.generate(40, 7):
        a, b = random.Random(9), random.Random(9)
        assert sft_code.example(p, a, 0.4, 0.5, 0.2) == sft_code.example(p, b, 0.4, 0.5, 0.2, bug_prob=0.0)
        assert a.random() == b.random()


def test_code_base_trains_on_code_examples():
    """`base.world: code` trains on toy_code examples (a few steps of a tiny model, smoke only)."""
    from agon.toy import sft
    from agon.toy.tokenizer import build_tokenizer

    tok = build_tokenizer()
    cfg = {"world": "code", "bug_prob": 0.5, "steps": 2, "batch_size": 4, "lr": 0.01, "attempt_prob": 0.4,
           "attempt_wrong_prob": 0.5, "false_start_prob": 0.15,
           "arch": {"hidden_size": 16, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1,
                    "intermediate_size": 32, "max_positions": 256}}
    model, history = sft.train_base(tok, cfg, set(), 0, log=lambda m: None)
    assert history[-1]["step"] == 1 and history[-1]["loss"] > 0
    from agon import worlds

    assert worlds.get("code").stream is toy_code.stream and worlds.get("search").load is toy_math.load
