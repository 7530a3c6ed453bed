"""Problem sources and seeded splits.

Every source returns problems in one schema (a plain dict, stored as JSONL):
    id          unique, stable string (source-prefixed)
    prompt      the question text, before any chat template
    answer      gold answer as a string (math)          -- or --
    tests       list of {"input", "output"} (code)
    difficulty  number; its scale is the source's own
    source      source name, e.g. "toy_math", "deepmath"
"""

REQUIRED_KEYS = ("id", "prompt", "difficulty", "source")


def check_problem(problem: dict, where: str) -> dict:
    """Fail early, naming the problem and file, if a record breaks the schema."""
    missing = [k for k in REQUIRED_KEYS if k not in problem]
    if "answer" not in problem and "tests" not in problem:
        missing.append("answer|tests")
    if missing:
        pid = problem.get("id", "<no id>")
        raise ValueError(f"{where}: problem {pid!r} lacks required key(s) {missing}")
    return problem
