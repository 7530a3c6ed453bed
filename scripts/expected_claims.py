"""Copy a run's claims table into the README's "Expected results" (and docs/expected/).

    python scripts/expected_claims.py [results/toy/tables/claims.csv]

The README shows the default's claims table as a run from a fresh clone wrote it. This
copies that run's claims.csv to docs/expected/claims_toy.csv and rewrites the table
between the README's `<!-- claims table` and `<!-- end of claims table -->` lines from it,
rendered by the same code as the run's claims.md (agon.report.claims.markdown).
tests/test_claims.py checks that the README's table is that file's rendering, so the two
cannot drift; rerun this after a new reference run of the default.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

EXPECTED = ROOT / "docs" / "expected" / "claims_toy.csv"
README = ROOT / "README.md"
BEGIN, END = "<!-- claims table", "<!-- end of claims table -->"


def readme_block(text: str) -> tuple[int, int]:
    """Line indices (begin marker, end marker) of the README's claims table."""
    lines = text.splitlines()
    begins = [i for i, line in enumerate(lines) if line.startswith(BEGIN)]
    ends = [i for i, line in enumerate(lines) if line == END]
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise ValueError(f"{README}: expected one '{BEGIN} ...' line followed by one '{END}' line")
    return begins[0], ends[0]


def rendered() -> list[str]:
    from agon.report import claims

    return claims.markdown(claims.read_rows(EXPECTED))


def main() -> None:
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "results" / "toy" / "tables" / "claims.csv"
    from agon import io
    from agon.report import claims

    claims.read_rows(source)  # refuses a file that is not a claims table
    EXPECTED.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, EXPECTED)
    text = README.read_text()
    begin, end = readme_block(text)
    lines = text.splitlines()
    lines[begin + 1:end] = rendered()
    io.write_text(README, "\n".join(lines) + "\n")
    print(f"{EXPECTED.relative_to(ROOT)} and README.md's claims table now hold {source}")


if __name__ == "__main__":
    main()
