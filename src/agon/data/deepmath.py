"""DeepMath-103K (`zwhe99/DeepMath-103K`, split "train"): the training pool.

Columns used: question, final_answer, difficulty (float, DeepMath's own 1-10
scale in steps of 0.5); topic is kept as metadata when present; the three R1
solutions are never read.

Hard split. The paper trains on "difficulty level 8 (hard split)". We read that
as difficulty == 8 exactly (the default, `difficulty_match: "eq"`); set
`difficulty_match: "ge"` to read it as difficulty >= 8 (which also takes 8.5,
9, ...). Config keys (under `datasets.<name>.options` of a dataset with `source: deepmath`, besides hub.COMMON_KEYS):

    difficulty        number, default 8
    difficulty_match  "eq" (default) or "ge"
    keep_binary       bool, default false: keep binary-answer problems

Binary-answer problems (yes/no, true/false, converges/diverges, ...) are
removed: a policy guessing at random is right half the time, which rewards
guessing. `is_binary_answer` defines "binary"; it ignores case, surrounding
LaTeX (`$\\boxed{\\text{Yes}}$`) and punctuation, and accepts the negated and
subject forms ("does not exist", "It converges", "No, it is not").
NOT binary: numbers, including 0 and 1 (a 0/1 answer is a number the model
must compute, and `1` vs `0` is not a yes/no judgement in DeepMath), equations
and expressions ("x=1"), and "no solution"/"none"/"undefined" (answers to
"find/solve" questions whose alternative is a value, not a yes/no).

ids are `deepmath-<hash of the stripped question>`, so they are stable across
runs and row orders; a question appearing twice is kept once (or dropped when
its copies disagree on the answer).

Counts (filled into `counts`): rows, after_difficulty, after_binary,
after_dedupe, kept.
"""

from __future__ import annotations

import math
import re

from .hub import SourceSpec, Tally, DataSourceError, content_id, label, load_rows, value

SPEC = SourceSpec(
    name="deepmath",
    hub_id="zwhe99/DeepMath-103K",
    split="train",
    required=("question", "final_answer", "difficulty"),
    optional=("topic",),
    keys=("difficulty", "difficulty_match", "keep_binary"),
)
MATCHES = ("eq", "ge")

# --- binary answers ---------------------------------------------------------

# Words that, on their own or negated ("not X", "does not X"), make a binary answer.
BINARY_WORDS = (
    "yes", "no", "true", "false", "correct", "incorrect", "right", "wrong",
    "valid", "invalid", "possible", "impossible",
    "exist", "exists", "existent", "nonexistent", "dne",
    "converge", "converges", "convergent", "diverge", "diverges", "divergent",
    "always", "never", "holds", "fails",
)
_NEGATIONS = r"(?:not|no|does not|do not|doesn't|don't|is not|isn't|cannot|can't|can not|will not|won't|never)"
_SUBJECTS = (r"(?:it|this|that|they|such|the (?:series|sequence|integral|limit|statement|claim|"
             r"answer|product|sum|function|map|set|equation|inequality|solution|number|matrix|"
             r"group|ring|space|conjecture|proposition|assertion))")
_BINARY_RE = re.compile(
    rf"^(?:{_SUBJECTS} )?(?:(?:is|does|do|will|can|would|must) )?(?:{_NEGATIONS} )?"
    rf"(?:{'|'.join(BINARY_WORDS)})(?: (?:absolutely|conditionally|uniformly|pointwise|always))?$"
)
_LATEX_WRAPPER = re.compile(
    r"\\(?:boxed|fbox|text|textbf|textit|textrm|textsf|texttt|mathrm|mathbf|mathit|mathsf|"
    r"mbox|operatorname|emph)\s*\{([^{}]*)\}")
_LATEX_SPACING = re.compile(r"\\(?:[,;:! ]|quad|qquad)|~")
_MATH_DELIMS = re.compile(r"\\[()\[\]]|\$")


def _normalise(answer: str) -> str:
    s = answer.strip()
    prev = None
    while prev != s:  # unwrap innermost wrappers first: \boxed{\text{No}} -> \boxed{No} -> No
        prev, s = s, _LATEX_WRAPPER.sub(r"\1", s)
    s = _MATH_DELIMS.sub(" ", _LATEX_SPACING.sub(" ", s))
    s = s.lower().replace("\u2019", "'")
    s = re.sub(r"[^a-z0-9' ]+", " ", s)   # punctuation, stray braces, markdown
    return " ".join(s.split()).strip("'")


def is_binary_answer(answer: str) -> bool:
    """True if `answer` is a yes/no-type judgement rather than a value.

    Case-insensitive; ignores LaTeX wrappers (\\boxed, \\text, \\mathrm, $..$)
    and punctuation. "Yes, because ..." / "No. It diverges" count as binary (the
    head before the first comma/period/semicolon decides). Numbers (0, 1, ...),
    expressions and "no solution"/"none" are not binary.
    """
    s = _normalise(answer)
    if not s:
        return False
    if _BINARY_RE.match(s):
        return True
    head = _normalise(re.split(r"[,;.:]", answer.strip().strip("$"), maxsplit=1)[0])
    return head != s and bool(head) and bool(_BINARY_RE.match(head))


# --- loader -----------------------------------------------------------------


def _difficulty_test(cfg: dict, name: str):
    target = cfg.get("difficulty", 8)
    match = cfg.get("difficulty_match", "eq")
    if isinstance(target, bool) or not isinstance(target, (int, float)):
        raise DataSourceError(f"{name}: {SPEC.key('difficulty')} must be a number, got {target!r}")
    if match not in MATCHES:
        raise DataSourceError(f"{name}: {SPEC.key('difficulty_match')} must be one of "
                              f"{MATCHES}, got {match!r}")
    if match == "eq":
        return (lambda d: math.isclose(d, target, abs_tol=1e-9)), f"difficulty == {target}"
    return (lambda d: d >= target - 1e-9), f"difficulty >= {target}"


def load(cfg: dict, counts: dict | None = None) -> list[dict]:
    """DeepMath problems in the project schema; fills `counts` with per-stage counts."""
    cfg = dict(cfg or {})
    name = label(SPEC, cfg)
    keep_difficulty, what = _difficulty_test(cfg, name)
    tally = Tally(SPEC, cfg)
    rows = tally.stage("rows", load_rows(SPEC, cfg), "reading the data")

    problems = []
    for i, row in enumerate(rows):
        question = value(row, "question", i, name).strip()
        problem = {
            "id": content_id(SPEC.name, question),
            "prompt": question,
            "answer": value(row, "final_answer", i, name).strip(),
            "difficulty": float(value(row, "difficulty", i, name, kind="number")),
            "source": SPEC.name,
        }
        if row.get("topic"):
            problem["meta"] = {"topic": row["topic"]}
        problems.append(problem)

    problems = tally.stage("after_difficulty", [p for p in problems if keep_difficulty(p["difficulty"])],
                           f"the difficulty filter ({what})")
    if not cfg.get("keep_binary", False):
        problems = [p for p in problems if not is_binary_answer(p["answer"])]
    problems = tally.stage("after_binary", problems, "removing binary-answer problems")
    return tally.finish(problems, counts)
