"""Regenerate tests/data/math_verify_cases.jsonl (read by tests/test_verify_math.py).

Where the cases come from:
  * math-verify 0.9.0's own test suite (the sdist ships tests/; the wheel does
    not). Every parametrized case of a test taking (gold, pred, expected) is
    read with `ast` from tests/test_*.py: test_all.py, test_boxed.py,
    test_numina_cases.py, test_open_thoughts.py, test_strict.py and
    test_yujianll.py (275 cases). Their tests call `parse`/`verify` with some
    non-default arguments (`compare_strings` in test_all.py: LaTeX and/or
    plain-expression extraction with boxed priority 0, and sometimes
    precision, strict or allow_set_relation_comp). agon always uses
    math_verify's default `verify` arguments, so a case whose expected value
    holds only with a non-default `verify` argument (precision=2, strict=False,
    allow_set_relation_comp=True; checked by re-running math_verify with the
    default instead) is left out: 4 cases. All other cases are kept, however
    they are phrased (bare answers, delimited answers, free text).
  * agon's own tricky cases (AGON_CASES below, origin "agon").

A kept math-verify case on which agon deliberately differs carries
`agon_expected` and `why` (EXCEPTIONS below); such an exception may reject an
answer math-verify accepts, never accept one it rejects unless the
prediction is right.

Usage (from the repository root, with the project's virtual environment):

    pip download --no-binary :all: --no-deps math-verify==0.9.0 -d /tmp/mvsrc
    tar xzf /tmp/mvsrc/math_verify-0.9.0.tar.gz -C /tmp/mvsrc
    .venv/bin/python tests/data/make_math_verify_cases.py /tmp/mvsrc/math_verify-0.9.0/tests \\
        > tests/data/math_verify_cases.jsonl
"""

from __future__ import annotations

import ast
import json
import logging
import math
import sys
from pathlib import Path

MV_VERSION = "0.9.0"
TEST_FILES = ["test_all.py", "test_boxed.py", "test_numina_cases.py", "test_open_thoughts.py",
              "test_strict.py", "test_yujianll.py"]
DEFAULT_VERIFY = {"precision": 6, "strict": True, "allow_set_relation_comp": False}

EXCEPTIONS = {
    "tests/test_all.py::test_number_extraction[5]": (
        False,
        "decimal comma: math-verify's plain-expression-only extraction reads '1000,99' as 1000.99; agon reads "
        "answers as LaTeX, where a comma not followed by exactly 3 digits separates list elements (math_verify's "
        "own LaTeX parser reads '$1000,99$' as the set {1000, 99}); see agon.verify.math",
    ),
    "tests/test_all.py::test_number_extraction[6]": (
        False,
        "decimal comma: as above, the gold '1,22' is the list {1, 22} when read as LaTeX, not 1.22",
    ),
    "tests/test_all.py::test_latex_notation[5]": (
        True,
        "math-verify's test extracts LaTeX only, where inline $...$ may not span lines; agon uses math_verify's "
        "default extraction (LaTeX, then plain expressions), which finds the 9 (math_verify's defaults give True "
        "too); the prediction is right",
    ),
    "tests/test_all.py::test_latex_notation[6]": (
        True,
        "as above, for \\( ... \\) spanning lines: the default extraction finds the 9; the prediction is right",
    ),
    "tests/test_yujianll.py::test_string_extraction[9]": (
        False,
        "wrong answer accepted by math-verify: it reads \\mathrm{e} as a trailing unit and cuts it off, so both "
        "sides parse as 1; agon reads \\mathrm{e} as Euler's number, and 1 - 1/e != 1 + 1/e",
    ),
}

# (gold, prediction, expected, what it checks)
AGON_CASES = [
    # thousands separators, joined only in the strict pattern
    ("1000", "1 000", True, "space"),
    ("1000", "1\\,000", True, "LaTeX thin space"),
    ("1000", "1\\ 000", True, "LaTeX control space"),
    ("1000", "1~000", True, "LaTeX tie"),
    ("1000", "1{,}000", True, "braced comma"),
    ("1000", "1,000", True, "plain comma, whole answer"),
    ("10000", "10,\\!000", True, "MATH's comma + negative thin space"),
    ("1000", "1\u2009000", True, "Unicode thin space"),
    ("1000", "1\u202f000", True, "Unicode narrow no-break space"),
    ("1000000", "1 000 000", True, "several groups"),
    ("1000000", "1,000,000", True, "several comma groups"),
    ("12345.6", "12\\,345.6", True, "thin space and decimals"),
    ("12345.6", "12 345.6", True, "space and decimals"),
    ("1000.5", "1,000.5", True, "comma and decimals"),
    ("-1000", "-1 000", True, "negative, space"),
    ("-1000", "-1,000", True, "negative, comma"),
    ("1\\,000", "1000", True, "separator in the gold"),
    ("10,\\!000", "10000", True, "MATH-style gold"),
    ("1{,}000", "1 000", True, "separators on both sides"),
    ("\\$1,000", "1000", True, "currency and comma"),
    ("1,000\\%", "1000\\%", True, "comma and percent"),
    ("1000", "\\boxed{1\\,000}", True, "inside \\boxed"),
    ("1000", "$1 000$", True, "inside $...$"),
    ("1000", "The answer is $1\\,000$.", True, "inside $...$ in prose"),
    ("(1000, 2000)", "(1{,}000, 2{,}000)", True, "braced commas inside a tuple"),
    ("1000", "1 000.0", True, "space, trailing .0"),
    ("1000000", "1,000 000", False, "mixed separators are not a number"),
    ("1000000", "1 000,000", False, "mixed separators are not a number"),
    ("10000", "1 0000", False, "a group of 4 digits is not a thousands group"),
    ("1000", "10 00", False, "a group of 2 digits is not a thousands group"),
    ("100000", "1000 00", False, "leading group of 4 digits"),
    ("123", "0 123", False, "a leading 0 is not a thousands number"),
    ("1000", "1  000", False, "two spaces are not one separator"),
    # commas: thousands only in a bare number, otherwise list separators
    ("1, 0", "1,000", False, "'1,000' alone is the number 1000, not the pair"),
    ("1000", "1, 000", False, "comma and space separate list elements"),
    ("100, 200", "100,200", False, "'100,200' alone is the number 100200 (documented ambiguity)"),
    ("100200", "100,200", True, "'100,200' alone is the number 100200"),
    ("\\{1, 2\\}", "1,2", True, "'1,2' is a list"),
    ("1.22", "1,22", False, "no decimal comma"),
    ("(1, 2)", "(1,2)", True, "tuple/interval keeps its comma"),
    ("[1,3)", "[1, 3)", True, "interval keeps its comma"),
    ("1, 2", "2, 1", True, "list answer"),
    ("1, 2", "1, 3", False, "list answer, wrong"),
    ("0.111", "0,111", True, "latex2sympy reads 0,ddd as a decimal (math-verify's rule, kept)"),
    # spaces inside numbers: not a number, never a product or a sum
    ("512", "12 500", False, "was read as 12 + 500"),
    ("12500", "12 500", True, "strict thousands pattern"),
    ("5", "2 3", False, "was read as 2 + 3"),
    ("6", "2 3", False, "not a product either"),
    ("23", "2 3", False, "not a concatenation either"),
    ("0", "2 000 000", False, "was read as 2*0*0"),
    ("2000000", "2 000 000", True, "strict thousands pattern"),
    ("62", "12 50", False, "was read as 12 + 50"),
    ("1250", "12 50", False, "not a concatenation"),
    ("5", "\\boxed{2 3}", False, "spaced numbers inside \\boxed"),
    ("5", "$2 3$", False, "spaced numbers inside $...$"),
    ("5", "2\\,3", False, "thin space between numbers"),
    ("5", "2~3", False, "tie between numbers"),
    ("5", "2\\ 3", False, "control space between numbers"),
    ("5", "2\\quad 3", False, "quad between numbers"),
    ("5", "2\n3", False, "line break between numbers"),
    ("6", "(1 2 3)", False, "cycle notation is not the product"),
    ("3.8", "3 4/5", False, "plain-text mixed number is not a number"),
    ("\\frac{7}{5}", "3 4/5", False, "was read as (3 + 4)/5"),
    ("\\frac{19}{5}", "3 \\frac{4}{5}", True, "LaTeX mixed number still works"),
    ("3.141592", "3.141 592", False, "grouped decimals are not supported"),
    ("(1 2 3)", "(1 2 3)", True, "a spaced gold is compared as a string"),
    ("(1 2 3)", "6", False, "a spaced gold is compared as a string"),
    ("(1 2 3)", "(1,2,3)", False, "a spaced gold is compared as a string"),
    ("2 3", "5", False, "a spaced gold is not a sum"),
    ("\\frac{\\ln 3}{\\ln 2}", "\\log_2 3", True, "a one-digit subscript is not a number of its own"),
    ("\\log_2 3", "\\log_{2}{3}", True, "a one-digit subscript is not a number of its own"),
    ("5", "2 + 3", True, "explicit sum"),
    ("6", "2 \\cdot 3", True, "explicit product"),
    ("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\begin{pmatrix}1\\\\2\\end{pmatrix}", True,
     "a matrix row break is not a space between numbers"),
    # scientific notation
    ("1500", "1.5e3", True, "lower-case e"),
    ("1500", "1.5E3", True, "upper-case E"),
    ("1500", "1.5e+3", True, "explicit plus"),
    ("1500", "15e2", True, "integer mantissa"),
    ("0.001", "1e-3", True, "negative exponent, whole answer"),
    ("0.001", "1E-3", True, "negative exponent, upper-case"),
    ("0.25", "2.5e-1", True, "negative exponent, decimal mantissa"),
    ("1.5e3", "1500", True, "scientific gold"),
    ("6.02\\times10^{23}", "6.02e23", True, "vs LaTeX form"),
    ("6.02e23", "6.02 \\times 10^{23}", True, "LaTeX form vs scientific gold"),
    ("6.02\\times10^{23}", "6.02e22", False, "wrong exponent"),
    ("6\\times10^{23}", "6e23", True, "integer mantissa vs LaTeX form"),
    ("600000000000000000000000", "6e23", True, "integer mantissa vs digits"),
    ("1.6\\times10^{-19}", "1.6e-19", True, "negative exponent vs LaTeX form"),
    ("3\\times10^{5}", "3e5", True, "integer mantissa"),
    ("2000", "2e3", True, "not 2*e*3"),
    ("6e", "2e3", False, "not 2*e*3"),
    ("\\frac{1}{2000}", "\\frac{1}{2e3}", True, "inside a fraction"),
    ("\\frac{1}{2000}", "1/2e3", True, "the literal is one token"),
    ("500", "1/2e3", False, "the literal is one token"),
    ("3000", "2\\cdot1.5e3", True, "after a command"),
    ("0.2", "2e-1", True, "whole answer: scientific"),
    ("2e-1", "0.2", True, "whole answer in the gold: scientific"),
    ("2e - 1", "2e-1", False, "whole answer: scientific, not 2e - 1"),
    ("x + 2e - 1", "x+2e-1", True, "inside an expression: Euler's e"),
    ("x + 0.2", "x+2e-1", False, "inside an expression: Euler's e"),
    ("2e", "2e", True, "Euler's e untouched"),
    ("2e", "5.43656365691809", True, "Euler's e untouched"),
    ("e^{x}", "e^{x}", True, "exponential untouched"),
    ("2e^{3}", "2\\exp(3)", True, "2e^3 is 2 times e cubed"),
    ("2000", "2e^{3}", False, "2e^3 is not scientific"),
    ("3be", "be3", True, "variables untouched"),
    ("3000b", "be3", False, "variables untouched"),
    ("2000x", "2e3x", False, "a literal glued to a variable is left to math_verify"),
    # negative numbers
    ("-5", "-5", True, "negative"),
    ("-5", "5", False, "sign matters"),
    ("5", "-5", False, "sign matters"),
    ("-5", "\u22125", True, "Unicode minus"),
    ("-\\frac{1}{2}", "-0.5", True, "negative fraction vs decimal"),
    ("-0.25", "-\\frac14", True, "negative decimal vs fraction"),
    ("-1000", "-1\\,000", True, "negative with thin space"),
    # decimals
    ("0.5", ".5", True, "leading point"),
    ("3.14", "3.140", True, "trailing zero"),
    ("3.14", "3.15", False, "different decimal"),
    ("7", "7.0", True, "integer vs decimal"),
    ("\\frac{1}{3}", "0.333333", True, "rounding to 6 places"),
    ("\\frac{1}{3}", "0.33", False, "rounding to 6 places"),
    ("0", "0.0", True, "zero"),
    ("0", "000", True, "zeros"),
    # percent
    ("50\\%", "50\\%", True, "percent"),
    ("50\\%", "50", True, "percent gold accepts the bare number (math_verify)"),
    ("50\\%", "0.5", True, "percent as a fraction (math_verify)"),
    ("12.5\\%", "12.5%", True, "unescaped percent"),
    ("50\\%", "60\\%", False, "different percent"),
    # upright constants
    ("1-\\frac{1}{\\mathrm{e}}", "1+\\frac{1}{\\mathrm{e}}", False, "\\mathrm{e} is Euler's number, not a unit"),
    ("1-\\frac{1}{\\mathrm{e}}", "1-e^{-1}", True, "\\mathrm{e} is Euler's number"),
    ("\\mathrm{e}^{2}", "e^2", True, "\\mathrm{e} is Euler's number"),
    # golds math_verify can compare only as strings
    ("x = \\frac{1}{2}, x = \\frac{-1 \\pm \\sqrt{13}}{4}", "x = \\frac{1}{2}, x = \\frac{-1 \\pm \\sqrt{13}}{4}", True,
     "string-only gold, same string"),
    ("x = \\frac{1}{2}, x = \\frac{-1 \\pm \\sqrt{13}}{4}", "x = \\frac{1}{2}", False,
     "string-only gold, other answer"),
    ("}{", "}{", True, "string-only gold, same string"),
    ("}{", "3", False, "string-only gold, an expression"),
    # string-only predictions never equal a gold that parsed
    ("3", "\\boxed{3", False, "unclosed box parses to nothing"),
    ("12:00", "12:00", True, "a time: math_verify matches the strings"),
    ("12:00", "1:00", False, "a time: different strings"),
]


def read_math_verify_cases(tests_dir: Path) -> list[dict]:
    cases = []
    for name in TEST_FILES:
        tree = ast.parse((tests_dir / name).read_text())
        for function in tree.body:
            if not isinstance(function, ast.FunctionDef):
                continue
            for decorator in function.decorator_list:
                if not (isinstance(decorator, ast.Call) and getattr(decorator.func, "attr", "") == "parametrize"):
                    continue
                names = [n.strip() for n in ast.literal_eval(decorator.args[0]).split(",")]
                if "gold" not in names:
                    continue
                # One case builds its gold with f"{math.sqrt(17):.15f}".
                rows = eval(compile(ast.Expression(decorator.args[1]), name, "eval"), {"math": math})
                call = _compare_strings_keywords(function)
                for i, row in enumerate(rows):
                    values = dict(zip(names, row))
                    options = {k: values[v[1]] if isinstance(v, tuple) else v for k, v in call.items()}
                    options.update({k: values[k] for k in DEFAULT_VERIFY if k in values})
                    cases.append({
                        "gold": values["gold"],
                        "pred": values["pred"],
                        "expected": bool(values.get("expected", values.get("result"))),
                        "origin": f"math-verify {MV_VERSION} tests/{name}::{function.name}[{i}]",
                        "_options": options,
                        "_compare_strings": bool(call) or "compare_strings" in ast.unparse(function),
                    })
    return cases


def _compare_strings_keywords(function: ast.FunctionDef) -> dict:
    keywords = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "compare_strings":
            for keyword in node.keywords:
                try:
                    keywords[keyword.arg] = ast.literal_eval(keyword.value)
                except ValueError:
                    keywords[keyword.arg] = ("parameter", keyword.value.id)
    return keywords


def math_verify_result(case: dict, verify_options: dict) -> bool:
    """What math-verify's test computes for `case`, with `verify_options`."""
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    if not case["_compare_strings"]:
        config = [LatexExtractionConfig(), ExprExtractionConfig()]
    else:
        config = [LatexExtractionConfig(boxed_match_priority=0) if kind == "latex" else ExprExtractionConfig()
                  for kind in case["_options"].get("match_types", ["latex", "expr"])]
    gold = parse(case["gold"], config, parsing_timeout=None)
    pred = parse(case["pred"], config, parsing_timeout=None)
    return verify(gold, pred, float_rounding=verify_options["precision"], strict=verify_options["strict"],
                  allow_set_relation_comp=verify_options["allow_set_relation_comp"], timeout_seconds=None)


def main(tests_dir: Path) -> None:
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    kept, left_out = [], []
    for case in read_math_verify_cases(tests_dir):
        options = {k: case["_options"].get(k, v) for k, v in DEFAULT_VERIFY.items()}
        assert math_verify_result(case, options) == case["expected"], case["origin"]
        if options != DEFAULT_VERIFY and math_verify_result(case, DEFAULT_VERIFY) != case["expected"]:
            left_out.append(case["origin"])
            continue
        short_origin = case["origin"].split(" ", 2)[2]
        if short_origin in EXCEPTIONS:
            case["agon_expected"], case["why"] = EXCEPTIONS.pop(short_origin)
        kept.append({k: v for k, v in case.items() if not k.startswith("_")})
    assert not EXCEPTIONS, f"exceptions naming no kept case: {sorted(EXCEPTIONS)}"
    kept += [{"gold": g, "pred": p, "expected": e, "origin": "agon", "note": note} for g, p, e, note in AGON_CASES]
    for case in kept:
        print(json.dumps(case))  # ASCII: thin spaces stay visible as \u2009
    print(f"{len(kept) - len(AGON_CASES)} math-verify cases kept, {len(left_out)} left out (they depend on a "
          f"non-default verify argument): {', '.join(left_out)}; {len(AGON_CASES)} agon cases", file=sys.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
