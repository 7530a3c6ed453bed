import random
import re

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
    for p in toy_math.generate(40, seed, levels=toy_math.ARITHMETIC_LEVELS):
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
    for p in toy_math.generate(300, 5, levels=toy_math.ARITHMETIC_LEVELS):
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


@given(seed=st.integers(0, 2**31 - 1))
@settings(max_examples=25, deadline=None)
def test_search_problems_have_one_answer(seed):
    for p in toy_math.generate(40, seed, levels=[toy_math.SEARCH_LEVEL]):
        check_problem(p, "test")
        a, b, c = map(int, re.fullmatch(r"(\d+)\*\?\+(\d+)=(\d+)", p["prompt"]).groups())
        assert [x for x in range(0, 100) if a * x + b == c] == [int(p["answer"])]
        assert int(p["answer"]) in toy_math.CANDIDATES and p["difficulty"] == toy_math.SEARCH_LEVEL


def test_search_check_sets_the_sum_beside_c():
    search = toy_math.Search.parse("7*?+3=45")
    assert search.answer == 6
    assert search.check(5) == "7*5=35,35+3=38<45"
    assert search.check(6) == "7*6=42,42+3=45=45"
    assert toy_math.Search.claimed(search.claim(4)) == 4 and toy_math.Search.claimed("") is None
    with pytest.raises(ValueError, match="not a level-5"):
        toy_math.Search.parse("7*6+3=?")


def _tries(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d+\*(\d+)=\d+,", text.split("</think>")[0])]


def test_search_examples_check_claims_first_and_never_repeat():
    from agon import prompts

    rng = random.Random(0)
    seen = {"right claim": 0, "wrong claim": 0, "empty": 0, "two": 0, "plain": 0}
    for p in toy_math.generate(400, 6, levels=[toy_math.SEARCH_LEVEL]):
        prompt, pieces = sft.example(p, rng, attempt_prob=0.6, attempt_wrong_prob=0.5, false_start_prob=0.3,
                                     two_attempts_prob=0.5)
        text = "".join(t for t, _ in pieces)
        assert all(trained for _, trained in pieces)  # a search writes nothing wrong it must not learn
        assert prompts.format_ok(text) and prompts.extract_answer(text) == p["answer"], text
        tries = _tries(text)
        assert tries[-1] == int(p["answer"]) and len(set(tries)) == len(tries)
        assert text.count(" no;") == len(tries) - 1  # every failed check is retracted
        assert prompts.summary(text) == toy_math.Search.parse(p["prompt"]).claim(int(p["answer"]))
        claims = [toy_math.Search.claimed(line) for line in prompt.split("\n")[1:] if line.startswith("R: ")]
        seen["two"] += len(claims) == 2
        seen["plain"] += not claims
        expected = list(dict.fromkeys(c for c in claims if c is not None))
        if int(p["answer"]) in expected:  # a right claim is checked, in order, and ends the search
            expected = expected[:expected.index(int(p["answer"])) + 1]
            assert tries == expected
            seen["right claim"] += 1
        else:
            assert tries[:len(expected)] == expected
            seen["wrong claim"] += bool(expected)
            seen["empty"] += "R: \n" in prompt
    assert all(seen.values()), seen


def test_table0s_habit_pattern_finds_every_supervised_bisection_and_no_failed_blind_search():
    # config tables.table0_preconditions.habit: what section 6 counts as the base bisecting
    from pathlib import Path

    from agon.config import load

    config = load(Path(__file__).resolve().parents[1] / "config" / "search.yaml")
    habit = re.compile(config["tables"]["table0_preconditions"]["habit"]["pattern"])
    rng = random.Random(2)
    problems = toy_math.generate(300, 0, levels=[toy_math.SEARCH_LEVEL])
    long_bisections = blind_from_5 = 0
    for problem in problems:
        bisection = "".join(t for t, _ in sft.example(problem, rng, 0.0, 0.0, 0.0, bisect_prob=1.0)[1])
        blind = "".join(t for t, _ in sft.example(problem, rng, 0.0, 0.0, 0.0, bisect_prob=0.0)[1])
        assert habit.search(bisection), bisection
        # a blind search matches only when it starts with 5 and 5 passes: the two look alike
        assert bool(habit.search(blind)) == (_tries(blind) == [5]), blind
        long_bisections += len(_tries(bisection)) > 1
        blind_from_5 += _tries(blind)[0] == 5 and len(_tries(blind)) > 1
    assert long_bisections > 200 and blind_from_5 > 10  # both sides of the pattern were exercised


def test_bisection_halves_what_is_left_and_says_which_way():
    from agon import prompts

    rng = random.Random(1)
    for problem in toy_math.generate(200, 0, levels=[toy_math.SEARCH_LEVEL]):
        search, answer = toy_math.Search.parse(problem["prompt"]), int(problem["answer"])
        text = "".join(t for t, _ in sft.example(problem, rng, 0.0, 0.0, 0.0, bisect_prob=1.0)[1])
        tries = _tries(text)
        assert tries == search.bisection() and tries[0] == 5 and tries[-1] == answer and len(tries) <= 4
        low, high = min(toy_math.CANDIDATES), max(toy_math.CANDIDATES)
        for x, verdict in zip(tries, re.findall(r" no([+-]);", text)):
            assert (verdict == "+") == (search.a * x + search.b < search.c)  # the comparison, not a guess
            low, high = (x + 1, high) if verdict == "+" else (low, x - 1)
            assert low <= answer <= high
        assert text.count(" no") == len(tries) - 1 and prompts.extract_answer(text) == problem["answer"]
    # a reader checks its rival's claim first: no bisection then
    prompt, pieces = sft.search_example(problem, rng, 1.0, 1.0, 0.0, bisect_prob=1.0)
    claim = toy_math.Search.claimed(prompt.split("R: ")[1])
    assert claim is None or _tries(pieces[0][0])[0] == claim
