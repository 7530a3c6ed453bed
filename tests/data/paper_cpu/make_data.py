#!/usr/bin/env python3
"""Write the stand-in datasets of tests/data/paper_cpu/ (see README.md there).

    python tests/data/paper_cpu/make_data.py [OUT_DIR]     # default: this folder

Writes deepmath.jsonl, gsm8k.jsonl, math500.jsonl and codecontests.jsonl, one
JSON object a line, in the exact column layout of the hub datasets the loaders
read (zwhe99/DeepMath-103K, openai/gsm8k "main", HuggingFaceH4/MATH-500,
deepmind/code_contests), columns the loaders ignore included. The output is
deterministic: the same rows in the same order, byte for byte, on every run.

Checks made while writing (an AssertionError stops the script):
  * questions / problems / descriptions are distinct within each file;
  * every GSM8K `<<expr=value>>` calculation evaluates to its value;
  * every CodeContests test (public, private, generated) is passed by the row's
    reference PYTHON3 solution, run in a subprocess (in a scratch directory
    holding input.txt for the file-I/O row), and every incorrect solution fails
    at least one of them.
Only the standard library is used.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent

# --- DeepMath-103K ------------------------------------------------------------
# (question, final_answer, topic, one line of working)

CALC_INT = "Mathematics -> Calculus -> Integral Calculus -> Techniques of Integration -> Single-variable"
CALC_LIM = "Mathematics -> Precalculus -> Limits"
CALC_SER = "Mathematics -> Calculus -> Integral Calculus -> Applications of Integrals"
SERIES = "Mathematics -> Calculus -> Differential Calculus -> Other"
NT = "Mathematics -> Number Theory -> Congruences"
NT_DIV = "Mathematics -> Number Theory -> Factorization"
COMB = "Mathematics -> Discrete Mathematics -> Combinatorics"
PROB = "Mathematics -> Applied Mathematics -> Statistics -> Probability -> Counting Methods -> Combinations"
GROUP = "Mathematics -> Algebra -> Abstract Algebra -> Group Theory"
LINALG = "Mathematics -> Algebra -> Linear Algebra -> Matrices"
ALG = "Mathematics -> Algebra -> Intermediate Algebra -> Other"
EQ = "Mathematics -> Algebra -> Algebra -> Equations and Inequalities"
GEOM = "Mathematics -> Geometry -> Plane Geometry -> Other"
COMPLEX = "Mathematics -> Algebra -> Intermediate Algebra -> Complex Numbers"
DERIV = "Mathematics -> Calculus -> Differential Calculus -> Derivatives"
ANALYSIS = "Mathematics -> Calculus -> Differential Calculus -> Applications of Derivatives"
REAL = "Mathematics -> Calculus -> Integral Calculus -> Other"

# Difficulty 8.0 with a value for an answer: the rows the paper's filters keep.
HARD = [
    (r"Find the remainder when \( 2^{100} \) is divided by 7.", "2", NT,
     r"Since \( 2^3 = 8 \equiv 1 \pmod 7 \) and \( 100 = 3 \cdot 33 + 1 \), \( 2^{100} \equiv 2 \)."),
    (r"Find the sum of all positive divisors of 360.", "1170", NT_DIV,
     r"\( 360 = 2^3 \cdot 3^2 \cdot 5 \), so the sum is \( 15 \cdot 13 \cdot 6 = 1170 \)."),
    (r"Evaluate the integral \( \int_0^{\pi/2} \sin^2 x \, dx \).", r"\frac{\pi}{4}", CALC_INT,
     r"Use \( \sin^2 x = \frac{1 - \cos 2x}{2} \); the cosine term integrates to 0, leaving \( \frac{\pi}{4} \)."),
    (r"Evaluate \( \lim_{x \to 0} \frac{1 - \cos x}{x^2} \).", r"\frac{1}{2}", CALC_LIM,
     r"\( 1 - \cos x = \frac{x^2}{2} + O(x^4) \), so the limit is \( \frac{1}{2} \)."),
    (r"Find the minimum value of \( f(x) = x^2 - 6x + 5 \) over the real numbers.", "-4", ALG,
     r"\( f(x) = (x - 3)^2 - 4 \), smallest at \( x = 3 \)."),
    (r"Compute the determinant of the matrix \( \begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix} \).",
     "-2", LINALG, r"\( 1 \cdot 4 - 2 \cdot 3 = -2 \)."),
    ("Two fair six-sided dice are rolled. What is the probability that the numbers shown add up to 8?",
     r"\frac{5}{36}", PROB, "The pairs (2,6), (3,5), (4,4), (5,3), (6,2) are 5 of the 36 outcomes."),
    ("A fair coin is tossed twice. What is the probability that at least one head appears?",
     r"\frac{3}{4}", PROB, r"Only TT has no head, so the probability is \( 1 - \frac{1}{4} \)."),
    (r"Find the distance between the points \( (1, 2) \) and \( (4, 5) \) in the plane.",
     r"3\sqrt{2}", GEOM, r"\( \sqrt{3^2 + 3^2} = \sqrt{18} = 3\sqrt{2} \)."),
    (r"Find the positive root of the equation \( x^2 - 2x - 1 = 0 \).", r"1 + \sqrt{2}", EQ,
     r"The roots are \( 1 \pm \sqrt{2} \); only \( 1 + \sqrt{2} \) is positive."),
    (r"Evaluate \( \int_{-\infty}^{\infty} \frac{dx}{1 + x^2} \).", r"\pi", CALC_INT,
     r"An antiderivative is \( \arctan x \), which goes from \( -\frac{\pi}{2} \) to \( \frac{\pi}{2} \)."),
    (r"Evaluate \( \sum_{n=1}^{\infty} \frac{1}{n^2} \).", r"\frac{\pi^2}{6}", SERIES,
     r"This is the Basel problem: \( \zeta(2) = \frac{\pi^2}{6} \)."),
    (r"Find the interval of convergence of the power series \( \sum_{n=1}^{\infty} \frac{x^n}{n} \).",
     "[-1, 1)", SERIES,
     r"The radius is 1; at \( x = -1 \) the alternating harmonic series converges, at \( x = 1 \) the harmonic series diverges."),
    (r"Find all real \( x \) with \( |2x - 5| \le 3 \). Give your answer as an interval.", "[1, 4]", EQ,
     r"\( -3 \le 2x - 5 \le 3 \) gives \( 2 \le 2x \le 8 \)."),
    (r"Compute the sum \( 1 + 2 + 3 + \cdots + 150 \).", "11{,}325", ALG,
     r"\( \frac{150 \cdot 151}{2} = 11325 \)."),
    ("How many strings of three decimal digits are there, leading zeros allowed?", "1000", COMB,
     r"\( 10^3 = 1000 \)."),
    (r"Find the ordered pair \( (x, y) \) of real numbers with \( x + y = 5 \) and \( x - y = 1 \).",
     "(3, 2)", EQ, r"Adding the equations gives \( 2x = 6 \), so \( x = 3 \) and \( y = 2 \)."),
    (r"How many integers \( n \) with \( 1 \le n \le 100 \) are divisible by 3 or by 5?", "47", COMB,
     r"By inclusion-exclusion, \( 33 + 20 - 6 = 47 \)."),
    ("How many positive integers less than 100 are relatively prime to 100?", "40", NT,
     r"\( \varphi(100) = 100 \cdot \frac{1}{2} \cdot \frac{4}{5} = 40 \)."),
    (r"Find the remainder when \( 7^{2023} \) is divided by 100.", "43", NT,
     r"\( 7^4 = 2401 \equiv 1 \pmod{100} \) and \( 2023 = 4 \cdot 505 + 3 \), so the remainder is \( 7^3 \bmod 100 = 43 \)."),
    ("In how many distinct ways can the letters of the word LEVEL be arranged?", "30", COMB,
     r"\( \frac{5!}{2! \, 2!} = 30 \)."),
    (r"How many permutations of \( \{1, 2, 3, 4, 5\} \) leave no element in its original position?",
     "44", COMB, r"The derangement number \( D_5 = 5! \sum_{k=0}^{5} \frac{(-1)^k}{k!} = 44 \)."),
    (r"Evaluate \( \lim_{n \to \infty} \left(1 + \frac{2}{n}\right)^n \).", "e^{2}", CALC_LIM,
     r"\( \left(1 + \frac{a}{n}\right)^n \to e^a \) with \( a = 2 \)."),
    (r"Find the radius of convergence of the power series \( \sum_{n=1}^{\infty} \frac{n!}{n^n} x^n \).",
     "e", SERIES, r"The ratio of consecutive coefficients is \( \left(\frac{n}{n+1}\right)^n \to \frac{1}{e} \)."),
    (r"Find the order of the element \( (2, 3) \) in the group \( \mathbb{Z}_4 \times \mathbb{Z}_9 \).",
     "6", GROUP, r"The orders of 2 in \( \mathbb{Z}_4 \) and 3 in \( \mathbb{Z}_9 \) are 2 and 3; their lcm is 6."),
    (r"How many elements of order 2 are there in the symmetric group \( S_4 \)?", "9", GROUP,
     "6 transpositions and 3 products of two disjoint transpositions."),
    (r"Solve \( \log_2 x + \log_2 (x - 2) = 3 \) for real \( x \).", "4", EQ,
     r"\( x(x - 2) = 8 \) gives \( x = 4 \) or \( x = -2 \), and only \( x = 4 \) is in the domain."),
    (r"Find the largest eigenvalue of the matrix \( \begin{pmatrix} 2 & 1 \\ 1 & 2 \end{pmatrix} \).",
     "3", LINALG, r"The characteristic polynomial \( (2 - \lambda)^2 - 1 \) has roots 1 and 3."),
    (r"Evaluate \( \int_0^1 \ln x \, dx \).", "-1", CALC_INT,
     r"\( \left[ x \ln x - x \right]_0^1 = -1 \)."),
    (r"Evaluate \( \int_0^{\infty} e^{-x^2} \, dx \).", r"\frac{\sqrt{\pi}}{2}", REAL,
     r"Half of the Gaussian integral \( \int_{-\infty}^{\infty} e^{-x^2} \, dx = \sqrt{\pi} \)."),
    (r"Find the maximum value of \( \sin x + \cos x \) over the real numbers.", r"\sqrt{2}", ANALYSIS,
     r"\( \sin x + \cos x = \sqrt{2} \sin\left(x + \frac{\pi}{4}\right) \)."),
    (r"Compute \( i^{2023} \), where \( i^2 = -1 \).", "-i", COMPLEX,
     r"\( 2023 \equiv 3 \pmod 4 \), so \( i^{2023} = i^3 = -i \)."),
    (r"Find the minimum value of \( \sin x \cos x \) over the real numbers.", r"-\frac{1}{2}", ANALYSIS,
     r"\( \sin x \cos x = \frac{\sin 2x}{2} \ge -\frac{1}{2} \)."),
    (r"Find the number of trailing zeros of \( 100! \).", "24", NT_DIV,
     r"\( \lfloor 100/5 \rfloor + \lfloor 100/25 \rfloor = 20 + 4 = 24 \)."),
]

# Difficulty 8.0 with a yes/no-type answer: removed by the binary-answer filter.
HARD_BINARY = [
    (r"Determine whether the series \( \sum_{n=2}^{\infty} \frac{1}{n (\ln n)^2} \) converges or diverges.",
     "Converges", SERIES, r"By the integral test, \( \int_2^\infty \frac{dx}{x (\ln x)^2} = \frac{1}{\ln 2} \) is finite."),
    (r"Is every continuous function on \( [0, 1] \) Riemann integrable?", "Yes", REAL,
     "A continuous function on a compact interval is bounded and its discontinuity set is empty."),
    (r"Does there exist a continuous bijection from \( \mathbb{R} \) onto \( \mathbb{R}^2 \)?",
     r"\boxed{No}", ANALYSIS, r"\( \mathbb{R}^2 \) would be the countable union of the arcs \( f([-n, n]) \), closed with empty interior, contradicting the Baire category theorem."),
    ("True or false: every group of order 15 is cyclic.", "True", GROUP,
     r"\( 15 = 3 \cdot 5 \) and 3 does not divide \( 5 - 1 \), so the group is \( \mathbb{Z}_{15} \)."),
    ("True or false: every bounded sequence of real numbers converges.", r"\text{False}", CALC_LIM,
     r"\( (-1)^n \) is bounded and does not converge."),
    (r"Determine whether \( \lim_{(x,y) \to (0,0)} \frac{xy}{x^2 + y^2} \) exists.", "Does not exist",
     CALC_LIM, r"Along \( y = mx \) the quotient is \( \frac{m}{1 + m^2} \), which depends on \( m \)."),
    (r"Does the series \( \sum_{n=1}^{\infty} \frac{(-1)^n}{\sqrt{n}} \) converge absolutely?", "No",
     SERIES, r"\( \sum \frac{1}{\sqrt{n}} \) diverges (a p-series with \( p = \frac{1}{2} \))."),
    (r"Is \( \sqrt{2} + \sqrt{3} \) irrational?", "YES.", NT,
     r"If it were rational, so would be \( (\sqrt{2} + \sqrt{3})^2 = 5 + 2\sqrt{6} \), hence \( \sqrt{6} \)."),
]

# Other difficulties: removed by the difficulty filter (== 8.0), whatever the answer.
OTHER_LEVELS = [
    (7.5, r"Compute \( 3! + 4! \).", "30", COMB, r"\( 6 + 24 = 30 \)."),
    (7.5, "Is every finite integral domain a field?", "Yes", "Mathematics -> Algebra -> Abstract Algebra -> Ring Theory",
     "Multiplication by a nonzero element is injective, hence surjective, on a finite set."),
    (8.5, r"Evaluate \( \lim_{x \to 0^+} x \ln x \).", "0", CALC_LIM,
     r"Write it as \( \frac{\ln x}{1/x} \) and apply L'Hopital's rule: \( \frac{1/x}{-1/x^2} = -x \to 0 \)."),
    (8.5, "How many groups of order 8 are there up to isomorphism?", "5", GROUP,
     r"Three abelian ones (\( \mathbb{Z}_8, \mathbb{Z}_4 \times \mathbb{Z}_2, \mathbb{Z}_2^3 \)) and two non-abelian ones (\( D_4, Q_8 \))."),
    (9.0, r"Evaluate \( \sum_{n=1}^{\infty} \frac{1}{n^4} \).", r"\frac{\pi^4}{90}", SERIES,
     r"\( \zeta(4) = \frac{\pi^4}{90} \), e.g. from the Fourier series of \( x^2 \)."),
    (9.0, "How many abelian groups of order 72 are there up to isomorphism?", "6", GROUP,
     r"\( 72 = 2^3 \cdot 3^2 \), so there are \( p(3) \cdot p(2) = 3 \cdot 2 = 6 \)."),
    (6.0, r"What is \( 2^{10} \bmod 7 \)?", "2", NT, r"\( 1024 = 7 \cdot 146 + 2 \)."),
    (6.0, r"Compute \( \gcd(84, 126) \).", "42", NT_DIV, r"\( 126 - 84 = 42 \) and 42 divides 84."),
    (6.0, r"Solve \( 3x + 7 = -8 \) for \( x \).", "-5", EQ, r"\( 3x = -15 \)."),
    (6.0, "Is 91 a prime number?", "No", NT, r"\( 91 = 7 \cdot 13 \)."),
]


def deepmath_row(question: str, answer: str, difficulty: float, topic: str, work: str) -> dict:
    return {
        "question": question,
        "final_answer": answer,
        "difficulty": float(difficulty),
        "topic": topic,
        "r1_solution_1": f"Okay, let me work through this. {work}\n\n**Final Answer**\n\\boxed{{{answer}}}",
        "r1_solution_2": f"Let's see. {work} So the answer should be {answer}.\n\n"
                         f"**Final Answer**\n\\boxed{{{answer}}}",
        "r1_solution_3": f"Hmm, first recall the relevant facts. {work}\n\n"
                         f"**Final Answer**\nThe answer is \\(\\boxed{{{answer}}}\\).",
    }


def deepmath_rows() -> list[dict]:
    keep = [deepmath_row(q, a, 8.0, t, w) for q, a, t, w in HARD]
    drop = [deepmath_row(q, a, 8.0, t, w) for q, a, t, w in HARD_BINARY]
    drop += [deepmath_row(q, a, d, t, w) for d, q, a, t, w in OTHER_LEVELS]
    # interleave deterministically: after every second kept row, one dropped row
    rows: list[dict] = []
    for i, row in enumerate(keep):
        rows.append(row)
        if i % 2 == 1 and drop:
            rows.append(drop.pop(0))
    rows += drop
    assert len({r["question"] for r in rows}) == len(rows), "DeepMath questions must be distinct"
    return rows


# --- GSM8K (main) -------------------------------------------------------------

GSM8K = [
    ("A baker makes 24 muffins on each tray and bakes 5 trays every morning. How many muffins "
     "does she bake in a week of 7 mornings?",
     "Each morning she bakes 24*5 = <<24*5=120>>120 muffins.\n"
     "In a week she bakes 120*7 = <<120*7=840>>840 muffins.\n#### 840"),
    ("A school has 1,250 students. Two fifths of them take the bus to school. How many students "
     "take the bus?",
     "The students who take the bus are 1250*2/5 = <<1250*2/5=500>>500.\n#### 500"),
    ("A car dealer sells 45 cars a month at $28,000 each. How much money does the dealer take in "
     "over a year?",
     "Each month the dealer takes in 45*28000 = $<<45*28000=1260000>>1,260,000.\n"
     "Over 12 months that is 1260000*12 = $<<1260000*12=15120000>>15,120,000.\n#### 15,120,000"),
    ("Liam reads 35 pages a day. His book has 420 pages. How many days does he need to finish it?",
     "He needs 420/35 = <<420/35=12>>12 days.\n#### 12"),
    ("A farmer has 3 orchards with 1,200 apple trees each. Every tree gives 15 kilograms of apples. "
     "How many kilograms of apples does the farmer harvest?",
     "The farmer has 3*1200 = <<3*1200=3600>>3,600 trees.\n"
     "They give 3600*15 = <<3600*15=54000>>54,000 kilograms of apples.\n#### 54,000"),
    ("Maria buys 3 notebooks at $4 each and 2 pens at $1.50 each. She pays with a $20 bill. How "
     "much change does she get?",
     "The notebooks cost 3*4 = $<<3*4=12>>12.\nThe pens cost 2*1.5 = $<<2*1.5=3>>3.\n"
     "Together she spends 12+3 = $<<12+3=15>>15.\nHer change is 20-15 = $<<20-15=5>>5.\n#### 5"),
    ("A full tank holds 500 liters of water and is drained at 20 liters per minute. How many "
     "liters are left after 18 minutes?",
     "In 18 minutes 20*18 = <<20*18=360>>360 liters drain.\n"
     "So 500-360 = <<500-360=140>>140 liters are left.\n#### 140"),
    ("Concert tickets cost $65. The hall has 32 rows of 48 seats and every seat is sold. How much "
     "money is collected?",
     "The hall has 32*48 = <<32*48=1536>>1,536 seats.\n"
     "The tickets bring in 1536*65 = $<<1536*65=99840>>99,840.\n#### 99,840"),
    ("Sam is 4 years older than twice his sister's age. His sister is 9 years old. How old is Sam?",
     "Twice his sister's age is 2*9 = <<2*9=18>>18.\nSam is 18+4 = <<18+4=22>>22 years old.\n#### 22"),
    ("A recipe uses 3 eggs for every 2 cups of flour. How many eggs are needed for 10 cups of flour?",
     "10 cups of flour make 10/2 = <<10/2=5>>5 batches.\nThey need 5*3 = <<5*3=15>>15 eggs.\n#### 15"),
]

_CALC = re.compile(r"<<([^=<>]+)=([^<>]+)>>")


def gsm8k_rows() -> list[dict]:
    rows = [{"question": q, "answer": a} for q, a in GSM8K]
    for r in rows:
        calcs = _CALC.findall(r["answer"])
        assert calcs, r["question"]
        for expr, result in calcs:
            assert abs(eval(expr, {"__builtins__": {}}) - float(result)) < 1e-9, (expr, result)
        assert re.search(r"\n#### -?[0-9][0-9,]*(\.[0-9]+)?$", r["answer"]), r["answer"]
    assert len({r["question"] for r in rows}) == len(rows)
    return rows


# --- MATH-500 -----------------------------------------------------------------

MATH500 = [
    ("What is the value of $3x + 2$ when $x = 4$?",
     r"Substituting, $3(4) + 2 = 12 + 2 = \boxed{14}$.", "14", "Algebra", 1, "test/algebra/2101.json"),
    (r"Solve for $x$: $\frac{x}{3} + \frac{x}{6} = 4$.",
     r"The left side is $\frac{2x + x}{6} = \frac{x}{2}$, so $\frac{x}{2} = 4$ and $x = \boxed{8}$.",
     "8", "Algebra", 3, "test/algebra/2102.json"),
    ("In how many ways can a committee of 2 people be chosen from a group of 6 people?",
     r"The order does not matter, so there are $\binom{6}{2} = \frac{6 \cdot 5}{2} = \boxed{15}$ ways.",
     "15", "Counting & Probability", 2, "test/counting_and_probability/2103.json"),
    ("A right triangle has legs of lengths 6 and 8. What is the length of its hypotenuse?",
     r"By the Pythagorean theorem the hypotenuse is $\sqrt{6^2 + 8^2} = \sqrt{100} = \boxed{10}$.",
     "10", "Geometry", 2, "test/geometry/2104.json"),
    ("Find the sum of the roots of $x^3 - 6x^2 + 11x - 6 = 0$.",
     r"By Vieta's formulas the sum of the roots is $-\frac{-6}{1} = \boxed{6}$.",
     "6", "Intermediate Algebra", 4, "test/intermediate_algebra/2105.json"),
    ("What is the greatest common divisor of $252$ and $198$?",
     r"$252 = 2^2 \cdot 3^2 \cdot 7$ and $198 = 2 \cdot 3^2 \cdot 11$, so the gcd is "
     r"$2 \cdot 3^2 = \boxed{18}$.", "18", "Number Theory", 3, "test/number_theory/2106.json"),
    (r"Simplify $\frac{18}{24}$.",
     r"Dividing numerator and denominator by 6 gives $\boxed{\frac{3}{4}}$.", r"\frac{3}{4}",
     "Prealgebra", 1, "test/prealgebra/2107.json"),
    (r"Compute $\cos 60^\circ$.",
     r"In a 30-60-90 triangle the side adjacent to the $60^\circ$ angle is half the hypotenuse, so "
     r"$\cos 60^\circ = \boxed{\frac{1}{2}}$.", r"\frac{1}{2}", "Precalculus", 2,
     "test/precalculus/2108.json"),
    (r"Convert the point $(1,\sqrt{3})$ in rectangular coordinates to polar coordinates.  Enter your "
     r"answer in the form $(r,\theta),$ where $r > 0$ and $0 \le \theta < 2 \pi.$",
     r"We have $r = \sqrt{1^2 + (\sqrt{3})^2} = 2$, and the point is in the first quadrant with "
     r"$\tan \theta = \sqrt{3}$, so $\theta = \frac{\pi}{3}$. The answer is "
     r"$\boxed{\left( 2, \frac{\pi}{3} \right)}$.", r"\left( 2, \frac{\pi}{3} \right)", "Precalculus",
     5, "test/precalculus/2109.json"),
    (r"Find the minimum value of $x + \frac{4}{x}$ over all real $x > 0$.",
     r"By AM-GM, $x + \frac{4}{x} \ge 2\sqrt{4} = 4$, with equality at $x = 2$, so the minimum is "
     r"$\boxed{4}$.", "4", "Intermediate Algebra", 5, "test/intermediate_algebra/2110.json"),
]


def math500_rows() -> list[dict]:
    rows = [{"problem": p, "solution": s, "answer": a, "subject": subj, "level": lvl, "unique_id": uid}
            for p, s, a, subj, lvl, uid in MATH500]
    for r in rows:
        assert f"\\boxed{{{r['answer']}}}" in r["solution"], r["unique_id"]
        assert 1 <= r["level"] <= 5 and re.fullmatch(r"test/[a-z_]+/\d+\.json", r["unique_id"])
    assert len({r["problem"] for r in rows}) == len(rows)
    assert len({r["unique_id"] for r in rows}) == len(rows)
    return rows


# --- CodeContests -------------------------------------------------------------
# Enum values of deepmind/code_contests (contest_problem.proto).
CODECHEF, CODEFORCES, HACKEREARTH, ATCODER, AIZU = 1, 2, 3, 6, 7
EASY, MEDIUM, EXTERNAL, A, B = 1, 2, 6, 7, 8
PYTHON3 = 3

# Each problem: name, source, difficulty, statement, input and output sections,
# solution, tests as (input, output) pairs: public, private, generated; optional
# extras (incorrect solutions, input_file/output_file, time limit, rating, tags).
PROBLEMS = [
    dict(name="1701_A. Sum of Numbers", source=CODEFORCES, difficulty=A,
         statement="You are given n integers. Print their sum.",
         input="The first line contains an integer n (1 ≤ n ≤ 100). The second line contains n "
               "integers a_1, a_2, ..., a_n (-10^9 ≤ a_i ≤ 10^9).",
         output="Print one integer: a_1 + a_2 + ... + a_n.",
         solution="n = int(input())\nprint(sum(map(int, input().split())))\n",
         public=[("3\n1 2 3\n", "6\n")],
         private=[("1\n-5\n", "-5\n"), ("4\n10 20 30 40\n", "100\n"),
                  ("2\n1000000000 1000000000\n", "2000000000\n")],
         generated=[("5\n0 0 0 0 0\n", "0\n"), ("3\n-1 -2 3\n", "0\n")],
         incorrect=["print(sum(map(int, input().split())))\n"],
         rating=800, tags=["implementation", "math"]),
    dict(name="PARITY", source=CODECHEF, difficulty=EASY,
         statement="For each of T given integers, say whether it is even or odd.",
         input="The first line contains T (1 ≤ T ≤ 1000). Each of the next T lines contains an "
               "integer N (-10^9 ≤ N ≤ 10^9).",
         output="For each N print EVEN if N is even and ODD otherwise, one answer per line.",
         solution="t = int(input())\nfor _ in range(t):\n    n = int(input())\n"
                  "    print(\"EVEN\" if n % 2 == 0 else \"ODD\")\n",
         public=[("3\n1\n2\n7\n", "ODD\nEVEN\nODD\n")],
         private=[("1\n0\n", "EVEN\n"), ("2\n-3\n100\n", "ODD\nEVEN\n")],
         generated=[("1\n999999999\n", "ODD\n")],
         incorrect=["t = int(input())\nfor _ in range(t):\n    n = int(input())\n"
                    "    print(\"ODD\" if n % 2 == 0 else \"EVEN\")\n"]),
    dict(name="1702_A. Reverse the String", source=CODEFORCES, difficulty=A,
         statement="You are given a string s of lowercase Latin letters. Print s reversed.",
         input="The only line contains s (1 ≤ |s| ≤ 100).",
         output="Print the characters of s in reverse order.",
         solution="print(input().strip()[::-1])\n",
         public=[("hello\n", "olleh\n")],
         private=[("a\n", "a\n"), ("abcd\n", "dcba\n"), ("racecar\n", "racecar\n")],
         generated=[("codeforces\n", "secrofedoc\n")],
         incorrect=["print(input().strip())\n"],
         rating=800, tags=["strings"]),
    dict(name="MAXLIST", source=CODECHEF, difficulty=EASY,
         statement="Find the largest of n given integers.",
         input="The first line contains n (1 ≤ n ≤ 10^5). The second line contains n integers, "
               "each between -10^9 and 10^9.",
         output="Print the largest of the n integers.",
         solution="n = int(input())\nprint(max(map(int, input().split())))\n",
         public=[("5\n3 9 2 7 4\n", "9\n")],
         private=[("1\n-7\n", "-7\n"), ("3\n-1 -5 -3\n", "-1\n"), ("4\n5 5 5 5\n", "5\n")],
         generated=[], time_limit=None, memory=0),
    dict(name="1703_A. Vowels", source=CODEFORCES, difficulty=A,
         statement="Count the vowels (the letters a, e, i, o and u) in a word.",
         input="The only line contains a word of 1 to 100 lowercase Latin letters.",
         output="Print the number of vowels in the word.",
         solution="print(sum(c in \"aeiou\" for c in input().strip()))\n",
         public=[("programming\n", "3\n"), ("aeiou\n", "5\n")],
         private=[("xyz\n", "0\n"), ("banana\n", "3\n"), ("queue\n", "4\n")],
         generated=[("a\n", "1\n")],
         rating=800, tags=["implementation", "strings"]),
    dict(name="SUMSQ", source=CODECHEF, difficulty=EASY,
         statement="Given n, print 1^2 + 2^2 + ... + n^2.",
         input="A single integer n (1 ≤ n ≤ 10^6).",
         output="Print the sum of the squares of the integers from 1 to n.",
         solution="n = int(input())\nprint(n * (n + 1) * (2 * n + 1) // 6)\n",
         public=[("3\n", "14\n")],
         private=[("1\n", "1\n"), ("10\n", "385\n"), ("100\n", "338350\n")],
         generated=[("2\n", "5\n"), ("1000\n", "333833500\n")],
         incorrect=["n = int(input())\nprint(n * (n + 1) // 2)\n"]),
    dict(name="1704_A. Minutes Before the New Year", source=CODEFORCES, difficulty=A,
         statement="The clock shows h hours and m minutes (24-hour format, not 0:00). How many "
                   "minutes are left before midnight?",
         input="The only line contains two integers h and m (0 ≤ h < 24, 0 ≤ m < 60, h and m are "
               "not both 0).",
         output="Print the number of minutes before midnight.",
         solution="h, m = map(int, input().split())\nprint(1440 - 60 * h - m)\n",
         public=[("23 55\n", "5\n")],
         private=[("0 1\n", "1439\n"), ("12 0\n", "720\n"), ("23 59\n", "1\n")],
         generated=[("1 1\n", "1379\n")],
         rating=800, tags=["math"]),
    dict(name="FCTRL0", source=CODECHEF, difficulty=EASY,
         statement="Print the factorial of n.",
         input="A single integer n (0 ≤ n ≤ 20).",
         output="Print n! = 1 · 2 · ... · n (and 0! = 1).",
         solution="import math\nprint(math.factorial(int(input())))\n",
         public=[("5\n", "120\n")],
         private=[("0\n", "1\n"), ("1\n", "1\n"), ("10\n", "3628800\n"),
                  ("20\n", "2432902008176640000\n")],
         generated=[("3\n", "6\n")],
         time_limit=(1, 500000000)),
    dict(name="1705_A. Palindrome", source=CODEFORCES, difficulty=A,
         statement="A string is a palindrome if it reads the same from left to right and from "
                   "right to left. Decide whether the given string is a palindrome.",
         input="The only line contains a string of 1 to 100 lowercase Latin letters.",
         output="Print YES if the string is a palindrome and NO otherwise.",
         solution="s = input().strip()\nprint(\"YES\" if s == s[::-1] else \"NO\")\n",
         public=[("abba\n", "YES\n"), ("abc\n", "NO\n")],
         private=[("a\n", "YES\n"), ("ab\n", "NO\n"), ("level\n", "YES\n")],
         generated=[("abcba\n", "YES\n"), ("abca\n", "NO\n")],
         incorrect=["s = input().strip()\nprint(\"YES\" if s[0] == s[-1] else \"NO\")\n"],
         rating=800, tags=["strings"]),
    dict(name="CNTDIG", source=CODECHEF, difficulty=EASY,
         statement="Count the decimal digits of a non-negative integer n.",
         input="A single integer n (0 ≤ n ≤ 10^18), without leading zeros.",
         output="Print the number of digits of n.",
         solution="print(len(input().strip()))\n",
         public=[("12345\n", "5\n")],
         private=[("0\n", "1\n"), ("1000000000000000000\n", "19\n"), ("7\n", "1\n")],
         generated=[]),
    dict(name="1706_A. Word Capitalization", source=CODEFORCES, difficulty=A,
         statement="Capitalization is writing a word with its first letter as a capital letter. "
                   "Capitalize the given word; all letters but the first stay as they are.",
         input="A single line with a non-empty word of at most 1000 lowercase and uppercase "
               "English letters.",
         output="Print the capitalized word.",
         solution="s = input().strip()\nprint(s[0].upper() + s[1:])\n",
         public=[("apple\n", "Apple\n"), ("Konjac\n", "Konjac\n")],
         private=[("a\n", "A\n"), ("zEBRA\n", "ZEBRA\n")],
         generated=[("xYz\n", "XYz\n")],
         incorrect=["print(input().strip().capitalize())\n"],
         rating=800, tags=["implementation", "strings"]),
    dict(name="EVENSUM", source=CODECHEF, difficulty=EASY,
         statement="Given n integers, print the sum of the even ones.",
         input="The first line contains n (1 ≤ n ≤ 1000). The second line contains n integers, "
               "each between -10^6 and 10^6.",
         output="Print the sum of the even integers among the given ones (0 if there are none).",
         solution="n = int(input())\nprint(sum(a for a in map(int, input().split()) if a % 2 == 0))\n",
         public=[("5\n1 2 3 4 5\n", "6\n")],
         private=[("3\n1 3 5\n", "0\n"), ("4\n-2 4 6 7\n", "8\n")],
         generated=[("1\n10\n", "10\n")]),
    dict(name="1707_A. Elephant", source=CODEFORCES, difficulty=A,
         statement="An elephant wants to visit his friend, who lives at point x > 0 of the "
                   "coordinate line; the elephant is at point 0. In one step he moves 1, 2, 3, 4 "
                   "or 5 positions forward. Find the minimum number of steps he needs.",
         input="The only line contains an integer x (1 ≤ x ≤ 1 000 000).",
         output="Print the minimum number of steps.",
         solution="x = int(input())\nprint((x + 4) // 5)\n",
         public=[("5\n", "1\n"), ("12\n", "3\n")],
         private=[("1\n", "1\n"), ("1000000\n", "200000\n"), ("999999\n", "200000\n")],
         generated=[("6\n", "2\n")],
         incorrect=["x = int(input())\nprint(x // 5)\n"],
         rating=800, tags=["math"]),
    dict(name="REVWORDS", source=CODECHEF, difficulty=EASY,
         statement="Print the words of a line in reverse order.",
         input="A single line of 1 to 100 words of lowercase letters separated by single spaces.",
         output="Print the same words in reverse order, separated by single spaces.",
         solution="print(\" \".join(input().split()[::-1]))\n",
         public=[("hello world\n", "world hello\n")],
         private=[("one\n", "one\n"), ("a b c d\n", "d c b a\n")],
         generated=[("the quick brown fox\n", "fox brown quick the\n")]),
    dict(name="1708_A. Distinct Values", source=CODEFORCES, difficulty=A,
         statement="You are given an array of n integers. How many distinct values does it contain?",
         input="The first line contains n (1 ≤ n ≤ 2 · 10^5). The second line contains n integers "
               "a_1, ..., a_n (|a_i| ≤ 10^9).",
         output="Print the number of distinct values among a_1, ..., a_n.",
         solution="n = int(input())\nprint(len(set(input().split())))\n",
         public=[("6\n1 2 2 3 3 3\n", "3\n")],
         private=[("1\n5\n", "1\n"), ("4\n7 7 7 7\n", "1\n"), ("5\n1 2 3 4 5\n", "5\n")],
         generated=[("3\n-1 1 -1\n", "2\n")],
         rating=800, tags=["implementation"]),
    dict(name="ABSDIFF", source=CODECHEF, difficulty=EASY,
         statement="Print the absolute difference of two integers a and b.",
         input="A single line with two integers a and b (-10^9 ≤ a, b ≤ 10^9).",
         output="Print |a - b|.",
         solution="a, b = map(int, input().split())\nprint(abs(a - b))\n",
         public=[("3 10\n", "7\n")],
         private=[("10 3\n", "7\n"), ("-5 5\n", "10\n"), ("0 0\n", "0\n")],
         generated=[],
         incorrect=["a, b = map(int, input().split())\nprint(b - a)\n"]),
    # --- rows the easy-split filters drop ------------------------------------
    dict(name="NDIVS", source=CODECHEF, difficulty=MEDIUM,  # difficulty filter
         statement="Print the number of positive divisors of n.",
         input="A single integer n (1 ≤ n ≤ 10^12).",
         output="Print the number of positive divisors of n.",
         solution="n = int(input())\nc, d = 0, 1\nwhile d * d <= n:\n    if n % d == 0:\n"
                  "        c += 1 if d * d == n else 2\n    d += 1\nprint(c)\n",
         public=[("6\n", "4\n")],
         private=[("12\n", "6\n"), ("1\n", "1\n"), ("36\n", "9\n")],
         generated=[("97\n", "2\n")]),
    dict(name="1701_B. Second Largest", source=CODEFORCES, difficulty=B,  # difficulty filter
         statement="You are given n distinct integers. Print the second largest of them.",
         input="The first line contains n (2 ≤ n ≤ 100). The second line contains n distinct "
               "integers, each between -10^9 and 10^9.",
         output="Print the second largest integer.",
         solution="n = int(input())\nprint(sorted(map(int, input().split()))[-2])\n",
         public=[("4\n1 5 3 2\n", "3\n")],
         private=[("2\n-1 -2\n", "-2\n"), ("3\n10 30 20\n", "20\n")],
         generated=[],
         rating=1000, tags=["sortings"]),
    dict(name="p02001 Sum of Digits", source=ATCODER, difficulty=EXTERNAL,  # difficulty filter
         statement="Print the sum of the decimal digits of N.",
         input="A single integer N (1 ≤ N ≤ 10^9).",
         output="Print the sum of the digits of N.",
         solution="print(sum(int(c) for c in input().strip()))\n",
         public=[("123\n", "6\n")],
         private=[("9\n", "9\n"), ("1000000000\n", "1\n")],
         generated=[]),
    dict(name="p00002 Rectangle", source=AIZU, difficulty=EXTERNAL,  # difficulty filter
         statement="Print the area and the perimeter of an a by b rectangle.",
         input="A single line with two integers a and b (1 ≤ a, b ≤ 100).",
         output="Print the area and the perimeter separated by a space.",
         solution="a, b = map(int, input().split())\nprint(a * b, 2 * (a + b))\n",
         public=[("3 5\n", "15 16\n")],
         private=[("1 1\n", "1 4\n"), ("100 2\n", "200 204\n")],
         generated=[]),
    dict(name="count-the-capitals", source=HACKEREARTH, difficulty=EXTERNAL,  # difficulty filter
         statement="Count the uppercase letters in a line of text.",
         input="A single line of 1 to 100 English letters.",
         output="Print the number of uppercase letters.",
         solution="print(sum(c.isupper() for c in input().strip()))\n",
         public=[("HackerEarth\n", "2\n")],
         private=[("abc\n", "0\n"), ("ABC\n", "3\n")],
         generated=[]),
    dict(name="120_A. Double It", source=CODEFORCES, difficulty=A,  # file I/O filter
         statement="Read an integer n from the file input.txt and write 2n to the file output.txt.",
         input="The file input.txt contains an integer n (1 ≤ n ≤ 1000).",
         output="Write 2n to output.txt.",
         solution="n = int(open(\"input.txt\").read())\nopen(\"output.txt\", \"w\").write(f\"{2 * n}\\n\")\n",
         public=[("2\n", "4\n")],
         private=[("3\n", "6\n"), ("1000\n", "2000\n")],
         generated=[],
         input_file="input.txt", output_file="output.txt", rating=800, tags=["implementation"]),
    dict(name="1709_A. Only Examples", source=CODEFORCES, difficulty=A,  # no grading tests
         statement="Print the length of the given string.",
         input="The only line contains a string of 1 to 100 lowercase Latin letters.",
         output="Print the length of the string.",
         solution="print(len(input().strip()))\n",
         public=[("abc\n", "3\n")], private=[], generated=[],
         rating=800, tags=["implementation"]),
]


def description(p: dict) -> str:
    """A statement in the dataset's layout: Codeforces' "Input\\n\\n..." sections, or CodeChef's."""
    if p["source"] == CODECHEF:
        examples = "\n\n".join(f"Input:\n{i}\nOutput:\n{o}" for i, o in p["public"])
        return (f"{p['statement']}\n\nInput\n{p['input']}\n\nOutput\n{p['output']}\n\n"
                f"Example\n{examples}".rstrip("\n"))
    head = "Example" if len(p["public"]) == 1 else "Examples"
    examples = "\n\n".join(f"Input\n\n{i}\n\nOutput\n\n{o}" for i, o in p["public"])
    return (f"{p['statement']}\n\nInput\n\n{p['input']}\n\nOutput\n\n{p['output']}\n\n"
            f"{head}\n\n{examples}").rstrip("\n")


def run(solution: str, stdin: str, input_file: str = "", output_file: str = "") -> str:
    """The program's output on `stdin` (through input_file/output_file when it names them)."""
    with tempfile.TemporaryDirectory() as d:
        if input_file:
            Path(d, input_file).write_text(stdin)
        proc = subprocess.run([sys.executable, "-I", "-c", solution], input="" if input_file else stdin,
                              capture_output=True, text=True, cwd=d, timeout=30)
        if proc.returncode != 0:
            return f"<exit {proc.returncode}: {proc.stderr.strip()[-200:]}>"
        return Path(d, output_file).read_text() if output_file else proc.stdout


def check_solutions(p: dict) -> None:
    tests = p["public"] + p["private"] + p["generated"]
    io = (p.get("input_file", ""), p.get("output_file", ""))
    for stdin, want in tests:
        got = run(p["solution"], stdin, *io)
        assert got == want, f"{p['name']}: reference solution gives {got!r} on {stdin!r}, expected {want!r}"
    for wrong in p.get("incorrect", []):
        assert any(run(wrong, i, *io) != o for i, o in tests), \
            f"{p['name']}: an incorrect solution passes every test"


def tests_cell(pairs) -> dict:
    return {"input": [i for i, _ in pairs], "output": [o for _, o in pairs]}


def codecontests_row(p: dict) -> dict:
    cf = p["source"] == CODEFORCES
    contest, _, index = p["name"].partition("_")
    limit = p.get("time_limit", (1, 0) if p["source"] == CODECHEF else (2, 0))
    return {
        "name": p["name"],
        "description": description(p),
        "public_tests": tests_cell(p["public"]),
        "private_tests": tests_cell(p["private"]),
        "generated_tests": tests_cell(p["generated"]),
        "source": p["source"],
        "difficulty": p["difficulty"],
        "solutions": {"language": [PYTHON3], "solution": [p["solution"]]},
        "incorrect_solutions": {"language": [PYTHON3] * len(p.get("incorrect", [])),
                                "solution": list(p.get("incorrect", []))},
        "cf_contest_id": int(contest) if cf else 0,
        "cf_index": index.split(".")[0] if cf else "",
        "cf_points": {"A": 500.0, "B": 1000.0}.get(index[:1], 0.0) if cf else 0.0,
        "cf_rating": p.get("rating", 0),
        "cf_tags": p.get("tags", []),
        "is_description_translated": False,
        "untranslated_description": "",
        "time_limit": None if limit is None else {"seconds": limit[0], "nanos": limit[1]},
        "memory_limit_bytes": p.get("memory", 256000000),
        "input_file": p.get("input_file", ""),
        "output_file": p.get("output_file", ""),
    }


def codecontests_rows() -> list[dict]:
    with ThreadPoolExecutor(max_workers=8) as pool:  # each run is a subprocess
        list(pool.map(check_solutions, PROBLEMS))
    keep = [p for p in PROBLEMS if p["difficulty"] in (EASY, A) and not p.get("input_file")
            and (p["private"] or p["generated"])]
    assert all((p["difficulty"], p["source"]) in ((EASY, CODECHEF), (A, CODEFORCES)) for p in keep)
    assert all(1 <= len(p["public"]) <= 2 and 2 <= len(p["private"]) <= 4 and len(p["generated"]) <= 3
               for p in keep)
    drop = [p for p in PROBLEMS if p not in keep]
    # interleave deterministically: after every third kept row, one dropped row
    ordered: list[dict] = []
    for i, p in enumerate(keep):
        ordered.append(p)
        if i % 3 == 2 and drop:
            ordered.append(drop.pop(0))
    ordered += drop
    rows = [codecontests_row(p) for p in ordered]
    assert len({r["description"] for r in rows}) == len(rows)
    return rows


# --- output -------------------------------------------------------------------

FILES = {"deepmath": deepmath_rows, "gsm8k": gsm8k_rows, "math500": math500_rows,
         "codecontests": codecontests_rows}


def write_jsonl(path: Path, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", nargs="?", default=str(HERE),
                        help="directory to write the four .jsonl files to (default: %(default)s)")
    out = Path(parser.parse_args(argv).out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, make in FILES.items():
        rows = make()
        write_jsonl(out / f"{name}.jsonl", rows)
        print(f"{out / (name + '.jsonl')}: {len(rows)} rows")


if __name__ == "__main__":
    main()
