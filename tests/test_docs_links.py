"""Every relative link and section pointer in the documentation resolves.

Checked in README.md, docs/*.md, profiles/*/README.md and config/README.md (when there is
one): each relative markdown link names a file or directory that exists, and its `#anchor`
(for a markdown target) is a heading of that file, by GitHub's slug rules. In those pages and
in the comments of config/*.yaml, profiles/*/config.yaml and envs/*.yaml, each pointer of the
forms `docs/NAME.md, "Heading"`, `README.md, "Heading"` (or `README, "Heading"`) and
`docs/NAME.md#anchor` names a file that exists and a heading it has, and each `docs/NAME.md`
named at all exists. Pure file reading: no network, no subprocess.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]

FENCE = re.compile(r"^(\s*)(```|~~~)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1", re.S)
# [text](target "title") and ![alt](target); the target has no spaces
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:|^//")
# `path.md, "Heading"` (path optionally in backticks), and the old `README, "Heading"`
POINTER = re.compile(r"`?(?P<path>(?:[\w.-]+/)*[\w.-]+\.md|\bREADME)`?,\s*\"(?P<heading>[^\"]+)\"")
ANCHORED = re.compile(r"(?P<path>(?:[\w.-]+/)*[\w.-]+\.md)#(?P<anchor>[\w-]+)")
DOCS_FILE = re.compile(r"(?<![\w./-])(?P<path>docs/[\w.-]+\.md)\b")


def slug(text: str) -> str:
    """GitHub's anchor for a heading: inline markup dropped, lowercase, every character but
    letters, digits, underscores, hyphens and spaces dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text stays
    text = re.sub(r"<[^>]+>", "", text)  # inline html
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def plain(text: str) -> str:
    """A heading or a quoted section name, compared as words: markup and spacing ignored."""
    return " ".join(re.sub(r"[`*_]", "", text).split())


def strip_code_blocks(text: str) -> str:
    """The text with fenced code blocks blanked (line numbers kept)."""
    out, fence = [], None
    for line in text.splitlines():
        m = FENCE.match(line)
        if fence:
            if m and m.group(2) == fence:
                fence = None
            out.append("")
        elif m:
            fence = m.group(2)
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


def headings(path: Path) -> tuple[set[str], set[str]]:
    """(anchors, plain heading texts) of a markdown file; repeated headings get -1, -2, ..."""
    anchors, texts, seen = set(), set(), {}
    for line in strip_code_blocks(path.read_text(encoding="utf-8")).splitlines():
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        anchors.add(base if n == 0 else f"{base}-{n}")
        texts.add(plain(re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", m.group(2))))
    return anchors, texts


_HEADINGS: dict[Path, tuple[set[str], set[str]]] = {}


def headings_of(path: Path) -> tuple[set[str], set[str]]:
    path = path.resolve()
    if path not in _HEADINGS:
        _HEADINGS[path] = headings(path)
    return _HEADINGS[path]


def rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def check_anchor(target: Path, anchor: str, where: str) -> list[str]:
    if target.is_dir() or target.suffix != ".md":
        return [f"{where}: #{anchor} points into {rel(target)}, which is not a markdown file"]
    if anchor not in headings_of(target)[0]:
        return [f"{where}: {rel(target)} has no heading with anchor #{anchor}"]
    return []


def link_problems(path: Path, root: Path = ROOT) -> list[str]:
    """Relative markdown links of `path` that do not resolve (file, then anchor)."""
    raw = path.read_text(encoding="utf-8")
    text = INLINE_CODE.sub(lambda m: " " * len(m.group(0)), strip_code_blocks(raw))
    problems = []
    targets = [(m.group(1), m.start()) for m in LINK.finditer(text)]
    targets += [(m.group(1), m.start()) for m in REFERENCE.finditer(text)]
    for target, pos in targets:
        if SCHEME.match(target):
            continue
        where = f"{rel(path)}:{line_of(text, pos)} link ({target})"
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / unquote(file_part)) if file_part else path
        if not dest.exists():
            problems.append(f"{where}: {rel(dest)} does not exist")
            continue
        if anchor:
            problems += check_anchor(dest, anchor, where)
    return problems


def resolve_pointer(path_text: str, source: Path, root: Path) -> Path | None:
    """A pointer's file: from the repository root, else beside the file that names it."""
    if path_text == "README":
        path_text = "README.md"
    for base in (root, source.parent):
        candidate = base / path_text
        if candidate.exists():
            return candidate
    return None


def pointer_problems(path: Path, text: str, root: Path = ROOT) -> list[str]:
    """`file, "Heading"`, `file.md#anchor` and `docs/NAME.md` pointers in `text` (from `path`)
    that do not resolve."""
    flat = " ".join(text.split())  # a pointer may wrap across lines
    problems = []
    for m in POINTER.finditer(flat):
        where = f"{rel(path)}: pointer {m.group(0)}"
        dest = resolve_pointer(m.group("path"), path, root)
        if dest is None:
            problems.append(f"{where}: no file {m.group('path')}")
        elif dest.suffix != ".md":
            problems.append(f"{where}: {rel(dest)} is not a markdown file")
        else:
            anchors, texts = headings_of(dest)
            heading = m.group("heading")
            if plain(heading) not in texts and slug(heading) not in anchors:
                problems.append(f"{where}: {rel(dest)} has no heading {heading!r}")
    for m in ANCHORED.finditer(flat):
        where = f"{rel(path)}: pointer {m.group(0)}"
        dest = resolve_pointer(m.group("path"), path, root)
        if dest is None:
            problems.append(f"{where}: no file {m.group('path')}")
        else:
            problems += check_anchor(dest, m.group("anchor"), where)
    for m in DOCS_FILE.finditer(flat):
        if resolve_pointer(m.group("path"), path, root) is None:
            problems.append(f"{rel(path)}: names {m.group('path')}, which does not exist")
    return problems


def yaml_comments(path: Path) -> str:
    """The comment text of a YAML file (a `#` at a line's start or after whitespace)."""
    comments = []
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.search(r"(?:^|\s)#(.*)$", line)
        if m:
            comments.append(m.group(1))
    return "\n".join(comments)


def markdown_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
             *sorted(ROOT.glob("profiles/*/README.md"))]
    if (ROOT / "config" / "README.md").exists():
        files.append(ROOT / "config" / "README.md")
    return files


def yaml_files() -> list[Path]:
    return [*sorted(ROOT.glob("config/*.yaml")), *sorted(ROOT.glob("profiles/*/config.yaml")),
            *sorted(ROOT.glob("envs/*.yaml"))]


def ids(paths: list[Path]) -> list[str]:
    return [rel(p) for p in paths]


@pytest.mark.parametrize("path", markdown_files(), ids=ids(markdown_files()))
def test_relative_links_resolve(path):
    assert link_problems(path) == []


@pytest.mark.parametrize("path", markdown_files(), ids=ids(markdown_files()))
def test_section_pointers_in_pages_resolve(path):
    assert pointer_problems(path, path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("path", yaml_files(), ids=ids(yaml_files()))
def test_section_pointers_in_config_comments_resolve(path):
    assert pointer_problems(path, yaml_comments(path)) == []


def test_the_documentation_exists():
    for page in ("install", "configuration", "cluster", "toy-world", "measurements", "sandbox", "extending",
                 "development", "status"):
        assert (ROOT / "docs" / f"{page}.md").is_file(), page
    # error messages in src/agon point here
    assert "Making a pinned base" in headings_of(ROOT / "docs" / "toy-world.md")[1]


def test_slugs_follow_githubs_rules():
    assert slug("Rerunning a cell, changing a hyper-parameter") == "rerunning-a-cell-changing-a-hyper-parameter"
    assert slug("The current world on an AMD bf16 CPU (2026-12-04 evening)") == \
        "the-current-world-on-an-amd-bf16-cpu-2026-12-04-evening"
    assert slug("When the harness fails: `sandbox_error`") == "when-the-harness-fails-sandbox_error"
    assert slug("The world with 10% bisections, on 800 held-out problems") == \
        "the-world-with-10-bisections-on-800-held-out-problems"
    assert slug("How the paper's protocols read") == "how-the-papers-protocols-read"


def test_broken_links_and_pointers_are_caught(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\n## Making a base\n\n## Making a base\n")
    page = tmp_path / "README.md"
    page.write_text(
        "# Top\n\n"
        "[ok](docs/a.md) [ok](docs/a.md#making-a-base) [ok](docs/a.md#making-a-base-1) [ok](#top)\n"
        "[missing file](docs/b.md) [missing anchor](docs/a.md#making-a-pin) [missing here](#nowhere)\n"
        "[outside](https://example.com/x.md#y) `[in code](docs/c.md)`\n\n"
        "```\n[in a block](docs/d.md)\n```\n")
    links = link_problems(page, tmp_path)
    assert len(links) == 3, links
    assert any("docs/b.md does not exist" in p for p in links)
    assert any("no heading with anchor #making-a-pin" in p for p in links)
    assert any("#nowhere" in p for p in links)

    prose = tmp_path / "docs" / "prose.md"
    prose.write_text(
        'See docs/a.md, "Making a base", `a.md`, "Making a\n base" and docs/a.md#making-a-base (ok);\n'
        'docs/a.md, "Making a pin" and README, "Nowhere" (broken); docs/a.md#making-a-pin; docs/e.md.\n')
    (tmp_path / "README.md").write_text("# Top\n")
    pointers = pointer_problems(prose, prose.read_text(), tmp_path)
    assert len(pointers) == 4, pointers
    assert any("'Making a pin'" in p for p in pointers) and any("'Nowhere'" in p for p in pointers)
    assert any("#making-a-pin" in p for p in pointers) and any("docs/e.md" in p for p in pointers)

    config = tmp_path / "c.yaml"
    config.write_text('key: "#not-a-comment"   # see docs/a.md, "Making a\n# pin" and docs/a.md#making-a-base\n')
    problems = pointer_problems(config, yaml_comments(config), tmp_path)
    assert len(problems) == 1 and "has no heading 'Making a pin'" in problems[0], problems
