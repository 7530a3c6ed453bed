"""The Grader picks each source's verifier: math-verify for DeepMath, GSM8K and MATH-500,
the sandbox for code, exact integers for the toy sums; every stage record names it."""

import pytest

from agon.evaluate import protocols
from agon.prompts import PromptFormat
from agon.verify.grading import VERIFIERS, Grader
from test_protocols import SAMPLING, ScriptedBackend


def answer(text: str) -> str:
    return f"<think>work</think>summary<answer>{text}</answer>"


def problem(source: str, gold: str, pid: str = "p") -> dict:
    return {"id": f"{source}-{pid}", "prompt": "q", "answer": gold, "difficulty": 8.0, "source": source}


@pytest.mark.parametrize("source", ["deepmath", "gsm8k", "math500"])
def test_math_sources_are_graded_by_math_verify(source):
    grader = Grader()
    p = problem(source, "\\frac{1}{2}")
    assert grader.verifier_for(p) == "math-verify"
    assert grader.correct(p, answer("0.5")) == 1         # equivalence, not string equality
    assert grader.correct(p, answer("\\dfrac{2}{4}")) == 1
    assert grader.correct(p, answer("1/3")) == 0
    assert grader.correct(p, "no answer block") == 0
    assert grader.counts["math_verified"] == 3 and grader.counts["no_answer"] == 1


def test_math_verify_false_positives_are_not_rewarded():
    grader = Grader()
    for gold, hack in [("512", "12 500"), ("5", "2 3"), ("0", "2 000 000")]:
        assert grader.correct(problem("deepmath", gold), answer(hack)) == 0, (gold, hack)


def test_toy_and_code_sources_keep_their_verifiers():
    assert VERIFIERS["toy_math"] == "exact" and VERIFIERS["codecontests"] == "sandbox"
    assert Grader().correct(problem("toy_math", "12"), answer("12")) == 1
    code = {"id": "codecontests-x", "prompt": "q", "difficulty": 7, "source": "codecontests",
            "tests": [{"input": "1 2\n", "output": "3\n"}]}
    assert Grader.verifier_for(code) == "sandbox"


def test_a_source_without_a_verifier_or_without_its_gold_is_an_error_naming_the_problem():
    with pytest.raises(ValueError, match=r"no verifier for source 'aime'.*'aime-p'.*known sources"):
        Grader().correct(problem("aime", "5"), answer("5"))
    no_tests = {"id": "codecontests-y", "prompt": "q", "difficulty": 7, "source": "codecontests"}
    with pytest.raises(ValueError, match=r"'codecontests-y'.*no 'tests'"):
        Grader().correct(no_tests, answer("print(1)"))


def test_every_stage_record_names_its_verifier():
    problems = [problem("gsm8k", "3", "a"), problem("toy_math", "3", "b")]
    sample = protocols.make_sampler(ScriptedBackend(), SAMPLING, seed=3)
    records = protocols.run("cascade", ["A", "B"], problems, sample, PromptFormat("toy"), Grader())
    assert [[s["verifier"] for s in r["stages"]] for r in records] == [["math-verify"] * 2, ["exact"] * 2]
