import random

import pytest
from hypothesis import given, settings, strategies as st

from agon.data import check_problem, toy_math
from agon.toy import sft


def _eval(expression: str) -> int:
    assert set(expression) <= set("0123456789+-*")
    return eval(expression)  # safe: digits and + - * only


def test_deterministic_in_seed():
    assert toy_math.generate(200, 3) == toy_math.generate(200, 3)
    assert toy_math.generate(200, 3) != toy_math.generate(200, 4)


@given(seed=st.integers(0, 2**31 - 1))
@settings(max_examples=25, deadline=None)
def test_answers_are_exact(seed):
    for p in toy_math.generate(40, seed):
        check_problem(p, "test")
        assert int(p["answer"]) == _eval(p["prompt"].removesuffix("=?"))
        steps = toy_math.derivation(p["prompt"].removesuffix("=?"))
        assert steps[-1].value == int(p["answer"])
        assert len(steps) == p["difficulty"]  # difficulty = number of elementary steps


def test_slips_propagate():
    steps = toy_math.derive("7*8+5+6*9", {0: 50})
    assert [s.render(v) for s, v in steps] == ["7*8=50", "6*9=54", "50+5=55", "55+54=109"]
    assert toy_math.answer("7*8+5+6*9") == 115
    assert toy_math.answer("9*9-5") == 76  # differences still parse, though no level uses them
    with pytest.raises(ValueError, match="cannot parse"):
        toy_math.derive("7**8")


def test_levels_and_distinct():
    problems = toy_math.generate(800, 0)
    assert {p["difficulty"] for p in problems} == set(toy_math.LEVELS)
    assert len({p["prompt"] for p in problems}) == len(problems)
    assert len({p["id"] for p in problems}) == len(problems)
    only = toy_math.generate(50, 0, levels=[4])
    assert {p["difficulty"] for p in only} == {4}


def test_unknown_level_is_named():
    with pytest.raises(ValueError, match="level 9"):
        toy_math.generate(5, 0, levels=[9])


def test_impossible_request_fails_clearly():
    # Level 2 (a*b+c with 1-digit operands) has only 8**3 distinct problems.
    with pytest.raises(ValueError, match="distinct"):
        toy_math.generate(600, 0, levels=[2])


def test_sft_examples_are_correct_and_well_formed():
    from agon import prompts
    from agon.verify.exact import is_correct

    rng = random.Random(0)
    saw_attempt = saw_wrong_attempt = saw_false_start = False
    for p in toy_math.generate(300, 5):
        prompt, pieces = sft.example(p, rng, attempt_prob=0.5, attempt_wrong_prob=0.5, false_start_prob=0.3)
        text = "".join(t for t, _ in pieces)
        assert prompts.format_ok(text), text
        assert is_correct(prompts.extract_answer(text), p["answer"])
        # Every untrained piece is a retracted wrong value, followed by " no".
        for i, (t, trained) in enumerate(pieces):
            if not trained:
                assert pieces[i + 1][0].startswith(" no")
                saw_false_start = True
        if "\nR: " in prompt:
            saw_attempt = True
            attempt = prompt.split("\nR: ")[1].strip()
            final = attempt.split(",")[-1].split("=")[-1]
            saw_wrong_attempt |= final != p["answer"]
    assert saw_attempt and saw_wrong_attempt and saw_false_start


@pytest.mark.parametrize("left,right,work", [
    (56, 54, "6+4=10,5+5+1=11,"), (18, 6, "8+6=14,1+0+1=2,"), (93, 2, "3+2=5,9+0+0=9,"),
    (7, 8, "7+8=15,0+0+1=1,"),
])
def test_column_work(left, right, work):
    step = toy_math.Step(left, "+", right)
    assert toy_math.column_work(step) == work
    # the columns compose to the sum: tens result then the units digit
    units, tens = work.rstrip(",").split(",")
    assert int(tens.split("=")[1] + units.split("=")[1][-1]) == step.value


def test_no_column_work_for_products_or_slips():
    assert toy_math.column_work(toy_math.Step(7, "*", 8)) == ""
    assert toy_math.column_work(toy_math.Step(56, "+", 54), value=100) == ""
