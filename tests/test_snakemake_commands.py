"""Every `snakemake` command the documentation shows parses, and means what it says.

Collected from README.md, docs/*.md, profiles/**/*.md (fenced shell blocks and inline code
spans), the `#` comments of config/*.yaml, profiles/**/*.yaml and the Snakefile: every shell
command whose first word is `snakemake` (or `.venv/bin/snakemake`, `python -m snakemake`), also
after a `$ ` prompt, `sudo -u USER`, `env X=Y`, `X=Y`, `/usr/bin/time -v`, `time`, `timeout ...`
or `nohup`, and every `bash scripts/run.sh ARGS` (which runs `snakemake --cores all ARGS`).

Each goes through snakemake's own command-line parser (snakemake 9.27.1, read in
snakemake/cli.py: `get_argument_parser()` builds the configargparse parser; `parse_args(argv)`
parses again with the `--profile`s and the workflow profile profiles/default, as the
`snakemake` command does), then through checks of what the parser accepts but the workflow
does not mean:

* every option is spelled out (argparse would also take an abbreviation or a prefix typo);
* every `--configfile` value is an existing .yaml/.yml/.json file. `--configfile` takes every
  word after it (nargs="+"), so `--configfile config/x.yaml results/...` reads the target as
  a config file: targets go BEFORE `--configfile`;
* every `--profile` names an existing profile directory (with a config.yaml);
* every target and `--forcerun` value is a rule of the workflow or a path under
  `results/<run>/`, with `<run>` the config's `run:` name;
* a command that runs jobs locally gives `--cores` (snakemake/api.py stops otherwise: "cores
  have to be specified for local execution"), unless a profile or executor takes over.

Placeholders: a command with `...` or `…` in it is elided (a fragment, not a command) and
skipped. Angle-bracket placeholders (`<run>`, `<copy of the profile>`) and all-capitals words
(`CELL`, `FILE`) stand for what the user fills in: they go through the parser (so one where
it needs a number, `--cores N`, is refused: show a number), and only the file checks skip them. A bare `snakemake` with no arguments names the program, not a command.
A `--configfile` the page itself asks the user to write (a YAML block of that page opening
with `# config/NAME.yaml`) need not exist.

A few commands with explicit targets are also dry-run (`snakemake -n`, about 2 s each) in a
scratch copy of the checkout's layout. A failure names the file and line of the command.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]

FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+-]*)")
SHELL_FENCES = {"", "bash", "sh", "shell", "console", "zsh"}
INLINE_CODE = re.compile(r"(`+)(.+?)\1", re.S)
PLACEHOLDER = "PLACEHOLDER"
ANGLE = re.compile(r"<[A-Za-z][^<>\n]*>")
CAPS = re.compile(r"^[A-Z][A-Z0-9_]*$")
# shell redirections, removed before splitting (`> log`, `2>&1`, `>> out`, `&> x`)
REDIRECT = re.compile(r"(?<!\S)(?:\d*>>?|&>)\s*&?\S+")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
SEPARATORS = {"&&", "||", ";", "|", "&", ";;"}
# Options of snakemake that only report or tidy up: they run no job, so need no --cores
# (the branches before execute_workflow in snakemake 9.27.1's cli.py, args_to_api).
NO_JOBS = ("lint", "list_target_rules", "list_rules", "print_compilation", "report", "generate_unit_tests",
           "dag", "rulegraph", "filegraph", "d3dag", "unlock", "cleanup_metadata", "conda_cleanup_envs",
           "conda_create_envs_only", "list_conda_envs", "cleanup_shadow", "container_cleanup_images",
           "list_changes", "list_input_changes", "list_params_changes", "list_untracked", "summary",
           "detailed_summary", "archive", "delete_all_output", "delete_temp_output", "dryrun", "touch",
           "version", "containerize")


@dataclass
class Command:
    path: str                 # relative to the repository root
    line: int
    shown: str                # the command as the page shows it
    argv: list[str] = field(default_factory=list)   # snakemake's arguments
    via: str = "snakemake"    # or "scripts/run.sh"
    env: bool = False         # started with environment assignments (PATH=..., env X=Y)
    own_configs: tuple[str, ...] = ()   # config files the page asks the user to write

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


# ---------------------------------------------------------------- collecting the commands

# A command that runs the next one: {its name: (its options that take an argument, whether other
# options may come too, how many positional arguments precede the command)}
WRAPPERS = {
    "sudo": ({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"}, True, 0),
    "env": ({"-u", "-C", "-S"}, True, 0),
    "time": ({"-f", "-o"}, True, 0),
    "timeout": ({"-s", "-k"}, True, 1),  # the duration
    "nice": ({"-n"}, False, 0),
    "nohup": (set(), False, 0),
    "exec": (set(), False, 0),
    "command": (set(), False, 0),
}


def strip_prefixes(words: list[str]) -> tuple[list[str], bool]:
    """The command after `sudo -u x`, `env X=Y`, `X=Y`, `/usr/bin/time -v`, `time`, `timeout ...`,
    `nohup`, `nice`; and whether it set environment variables."""
    words, env = list(words), False
    while words:
        w, base = words[0], os.path.basename(words[0])
        if ASSIGNMENT.match(w):
            words.pop(0)
            env = True
            continue
        if base not in WRAPPERS:
            break
        with_argument, any_option, positionals = WRAPPERS[base]
        words.pop(0)
        env = env or base == "env"
        while words and words[0].startswith("-") and (any_option or words[0] in with_argument):
            if words.pop(0) in with_argument and words:
                words.pop(0)
        del words[:positionals]
    return words, env


def commands_in(text: str, path: str, line: int) -> list[Command]:
    """The snakemake commands of one shell line (prompt, continuations and comment already
    handled by the caller where they differ)."""
    text = re.sub(r"^\s*\$\s+", "", text)
    shown = " ".join(text.split())
    text = ANGLE.sub(PLACEHOLDER, text)
    text = REDIRECT.sub(" ", text)
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: prose, not a command
        return []
    segments, current = [], []
    for token in tokens:
        if token in SEPARATORS:
            segments.append(current)
            current = []
        else:
            current.append(token)
    segments.append(current)
    out = []
    for words in segments:
        words, env = strip_prefixes(words)
        if not words:
            continue
        first = os.path.basename(words[0])
        if first == "snakemake":
            argv, via = words[1:], "snakemake"
        elif first.startswith("python") and words[1:3] == ["-m", "snakemake"]:
            argv, via = words[3:], "snakemake"
        elif (first in ("bash", "sh") and words[1:2] == ["scripts/run.sh"]) or words[0] in (
                "scripts/run.sh", "./scripts/run.sh"):
            argv, via = ["--cores", "all", *words[2 if first in ("bash", "sh") else 1:]], "scripts/run.sh"
        else:
            continue
        if via == "snakemake" and not argv:
            continue  # the program's name, not a command
        out.append(Command(path, line, shown, argv, via, env))
    return out


def elided(command: Command) -> bool:
    return any("..." in w or "…" in w for w in command.argv)


def markdown_commands(text: str, rel: str) -> list[Command]:
    """Fenced shell blocks line by line (a `$ ` prompt dropped, `\\` continuing a line, `#`
    comments dropped), then every inline code span of the prose, across line breaks."""
    out, prose, fence, pending, start = [], [], None, "", 0
    for number, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = (m.group(1)[0], m.group(2).lower())
            prose.append("")
            continue
        if fence is not None:
            prose.append("")
            if m and m.group(1)[0] == fence[0] and not m.group(2):
                fence, pending = None, ""
                continue
            if fence[1] not in SHELL_FENCES:
                continue
            if not pending:
                start = number
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            out.extend(commands_in(pending + line, rel, start))
            pending = ""
            continue
        prose.append(line)
    own = tuple(re.findall(r"^\s*(?:`{3,}|~{3,})\s*ya?ml\s*\n\s*#\s*(config/[\w.-]+\.ya?ml)\s*$", text, re.M))
    out = [replace(c, own_configs=own) for c in out]
    joined = "\n".join(prose)
    for m in INLINE_CODE.finditer(joined):
        number = joined.count("\n", 0, m.start()) + 1
        out.extend(replace(c, own_configs=own) for c in commands_in(m.group(2).replace("\n", " "), rel, number))
    return out


def comment_commands(text: str, rel: str) -> list[Command]:
    """Commands in the `#` comments of a YAML file or the Snakefile: an inline code span, or an
    indented comment line (`#` and two or more spaces, as these files show commands; other
    comment lines are prose). Such a command ends at a run of two or more spaces (what follows
    describes it); a trailing `\\` continues it on the next comment line."""
    out, pending, start = [], "", 0
    for number, line in enumerate(text.splitlines(), 1):
        full = re.match(r"^\s*#+(.*)$", line)
        trailing = None if full else re.match(r"^.*?\s#(.*)$", line)
        if not (full or trailing):
            pending = ""
            continue
        body = (full or trailing).group(1)
        spans = list(INLINE_CODE.finditer(body))
        if spans or not full:
            for span in spans:
                out.extend(commands_in(span.group(2), rel, number))
            pending = ""
            continue
        if not pending and not re.match(r"^\s{2,}\S", body):
            continue
        command = re.split(r"(?<=\S)\s{2,}", body.strip(), maxsplit=1)[0]
        if not pending:
            start = number
        if command.endswith("\\"):
            pending += command[:-1] + " "
            continue
        out.extend(commands_in(pending + command, rel, start))
        pending = ""
    return out


def sources() -> list[Path]:
    md = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "profiles").glob("**/*.md"))]
    commented = [*sorted((ROOT / "config").glob("*.yaml")), *sorted((ROOT / "profiles").glob("**/*.yaml")),
                 ROOT / "Snakefile"]
    return [p for p in md + commented if p.is_file()]


@lru_cache(maxsize=None)
def collected() -> tuple[Command, ...]:
    out = []
    for path in sources():
        read = markdown_commands if path.suffix == ".md" else comment_commands
        out.extend(read(path.read_text(), path.relative_to(ROOT).as_posix()))
    return tuple(out)


# ---------------------------------------------------------------- checking one command

@lru_cache(maxsize=None)
def rules() -> frozenset[str]:
    names = set()
    for f in [ROOT / "Snakefile", *(ROOT / "workflow" / "rules").glob("*.smk")]:
        names.update(re.findall(r"^(?:rule|checkpoint)\s+(\w+)\s*:", f.read_text(), re.M))
    return frozenset(names)


def placeholder(word: str) -> bool:
    return PLACEHOLDER in word or bool(CAPS.match(word))


def run_name(configfiles: list[Path]) -> str | None:
    """The `run:` of the last config file that sets it (through `extends:`), else the embedded
    default's; None when a config file is not in the repository (one the user writes)."""
    def of(path: Path, seen=()) -> str | None:
        if path in seen:
            return None
        data = yaml.safe_load(path.read_text()) or {}
        if "run" in data:
            return data["run"]
        if data.get("extends") and (path.parent / data["extends"]).is_file():
            return of(path.parent / data["extends"], (*seen, path))
        return None
    if not all((ROOT / p).is_file() for p in configfiles):
        return None
    for path in reversed(configfiles):
        name = of(ROOT / path)
        if name:
            return name
    return of(ROOT / "config" / "config.yaml")


@lru_cache(maxsize=1)
def plain_parser():
    from snakemake import cli

    return cli.get_argument_parser()


def parse(argv: list[str], with_profiles: bool):
    """(args, None) or (None, the parser's complaint)."""
    from snakemake import cli

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), contextlib.chdir(ROOT):
        try:
            if with_profiles:
                return cli.parse_args(argv)[1], None
            return plain_parser().parse_args(argv), None
        except SystemExit:
            lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
            return None, lines[-1] if lines else "refused"


def option_problems(argv: list[str]) -> list[str]:
    known = plain_parser()._option_string_actions
    out = []
    for word in argv:
        if word == "--":
            break
        if not word.startswith("-") or re.fullmatch(r"-\d+(\.\d+)?", word):
            continue
        name = word.split("=", 1)[0]
        if name in known:
            continue
        if not name.startswith("--") and all(f"-{c}" in known for c in name[1:]):
            continue  # -np: short flags together
        out.append(f"option {name} is not snakemake's (an abbreviation or a typo; argparse would guess)")
    return out


def problems(command: Command) -> list[str]:
    args, error = parse(command.argv, with_profiles=False)
    if error:
        return [f"snakemake's parser refuses it: {error}"]
    out = option_problems(command.argv)
    configfiles = [Path(p) for p in args.configfile or []]
    for value in configfiles:
        text = str(value)
        if placeholder(text):
            continue
        if text.startswith("results/") or (ROOT / text).is_dir() or text in rules():
            out.append(f"--configfile takes every word after it, so the target {text} is read as a config "
                       "file: put targets BEFORE --configfile")
        elif value.suffix not in (".yaml", ".yml", ".json"):
            out.append(f"--configfile {text}: not a .yaml/.yml/.json file")
        elif not (ROOT / value).is_file() and text not in command.own_configs:
            out.append(f"--configfile {text}: no such file")
    profiles = args.profile or []
    profiles = [profiles] if isinstance(profiles, str) else list(profiles)
    real_profiles = True
    for profile in profiles:
        if profile == "none":
            continue
        if placeholder(profile):
            real_profiles = False
        elif not ((ROOT / profile).is_dir() and any((ROOT / profile / f).is_file()
                                                     for f in ("config.yaml", "profile.yaml"))):
            out.append(f"--profile {profile}: no profile directory with a config.yaml there")
            real_profiles = False
    if out:
        return out
    if real_profiles:  # the profiles' keys too, as the snakemake command reads them
        full, error = parse(command.argv, with_profiles=True)
        if error:
            return [f"snakemake's parser refuses it with its profiles: {error}"]
        args = full
    run = run_name([p for p in configfiles if not placeholder(str(p))])
    targets = [(t, "target") for t in args.targets or []]
    targets += [(t, "--forcerun value") for t in args.forcerun or []]
    for target, what in targets:
        target = str(target)
        if placeholder(target) or target in rules():
            continue
        if not target.startswith("results/"):
            out.append(f"{what} {target}: neither a rule nor a path under results/")
        elif run and target.split("/")[1] != run:
            out.append(f"{what} {target}: this config's outputs are under results/{run}/")
    runs_jobs = not any(getattr(args, name, None) for name in NO_JOBS)
    local = getattr(args, "executor", None) in (None, "local")
    if runs_jobs and local and args.cores is None and getattr(args, "jobs", None) is None:
        out.append("runs jobs locally without --cores (snakemake stops: 'cores have to be specified "
                   "for local execution')")
    return out


# ---------------------------------------------------------------- the tests

def test_the_pages_show_snakemake_commands():
    """The collector finds what the pages show: a fenced block, an inline span across a line
    break, a YAML comment, a `bash scripts/run.sh` line."""
    found = {(c.path, " ".join(c.argv)) for c in collected()}
    assert len(collected()) >= 30, len(collected())
    assert ("README.md", "--profile profiles/slurm-gpu --configfile config/paper.yaml") in found
    assert any(p == "config/paper.yaml" for p, _ in found)
    assert any(p == "Snakefile" for p, _ in found)
    assert any(c.via == "scripts/run.sh" for c in collected())


@pytest.mark.parametrize("command", [c for c in collected() if not elided(c)], ids=lambda c: c.where)
def test_each_command_parses_and_means_what_it_says(command, monkeypatch):
    monkeypatch.delenv("SNAKEMAKE_PROFILE", raising=False)
    found = problems(command)
    assert not found, f"{command.where}: `{command.shown}`\n  " + "\n  ".join(found)


WRONG = {
    "--cores 2 --configfile config/smollm2.yaml results/smollm2/tables/table3_main.csv": "put targets BEFORE",
    "--cores all --forcerunn results/toy/train": "refuses",
    "--cores all --forcer results/toy/train/toy/agon/seed0/adapters": "abbreviation",
    "--profile profiles/slurm-gpus --configfile config/paper.yaml": "no profile directory",
    "--cores all --configfile config/nope.yaml": "no such file",
    "--cores all toy/train/toy/agon/seed0/adapters": "neither a rule nor a path",
    "results/fp32/eval/toy/grpo/seed0 --cores all --configfile config/seeds.yaml": "under results/seeds/",
    "results/toy/report.md": "without --cores",
}


@pytest.mark.parametrize("argv", WRONG)
def test_the_checks_catch_wrong_commands(argv, monkeypatch):
    monkeypatch.delenv("SNAKEMAKE_PROFILE", raising=False)
    found = problems(Command("example", 1, argv, shlex.split(argv)))
    assert any(WRONG[argv] in p for p in found), found


def test_the_collector_reads_every_form():
    page = ("# x\n\n```bash\n$ snakemake --cores all \\\n    --configfile config/test.yaml  # a comment\n"
            "sudo -u agonuser env X=1 /usr/bin/time -v snakemake -n && echo done\n"
            "timeout -s KILL 60 snakemake ...\n```\n\n```yaml\n# snakemake --not-a-shell-block\n```\n\n"
            "Run `snakemake --cores\nall` or `bash scripts/run.sh -n`; `snakemake` is the program.\n")
    got = [(c.line, c.argv, c.via) for c in markdown_commands(page, "page.md")]
    assert got == [(4, ["--cores", "all", "--configfile", "config/test.yaml"], "snakemake"),
                   (6, ["-n"], "snakemake"), (7, ["..."], "snakemake"),
                   (14, ["--cores", "all"], "snakemake"), (15, ["--cores", "all", "-n"], "scripts/run.sh")], got
    conf = ("# Run it, snakemake style:\n#   snakemake --cores 2 --configfile config/smollm2.yaml \\\n"
            "#       results/smollm2/tables/table3_main.csv\n"
            "#   snakemake -n --configfile config/paper.yaml          (what would run)\n"
            "# snakemake records each rule's env file (prose)\n"
            "run: x   # or `snakemake --unlock`\n")
    got = [(c.line, c.argv) for c in comment_commands(conf, "c.yaml")]
    assert got == [(2, ["--cores", "2", "--configfile", "config/smollm2.yaml",
                        "results/smollm2/tables/table3_main.csv"]),
                   (4, ["-n", "--configfile", "config/paper.yaml"]), (6, ["--unlock"])], got


def dry_run_subset() -> list[Command]:
    """Distinct commands with explicit targets or --forcerun, no profile, no environment
    prefix and no placeholder: the ones a dry run can prove wrong beyond the parser."""
    chosen, seen = [], set()
    for c in collected():
        if elided(c) or c.env or c.via != "snakemake" or any(placeholder(w) for w in c.argv):
            continue
        args, error = parse(c.argv, with_profiles=False)
        if error or args.profile or any(getattr(args, n, None) for n in NO_JOBS if n != "dryrun"):
            continue
        if not (args.targets or args.forcerun):
            continue
        key = (tuple(map(str, args.configfile or [])), tuple(args.targets or []), tuple(args.forcerun or []))
        if key not in seen:
            seen.add(key)
            chosen.append(c)
    return chosen


def missing_packages(command: Command) -> list[str]:
    """Python packages a command's config reads its models from, not installed here."""
    from agon.config import load

    args, _ = parse(command.argv, with_profiles=False)
    missing = []
    for configfile in args.configfile or []:
        models = (load(ROOT / configfile).get("models") or {}).values()
        missing += [m["package"] for m in models if m.get("package") and not importlib.util.find_spec(m["package"])]
    return missing


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """The checkout's layout without its results/ and .snakemake/: a dry run there cannot be
    fooled by (or touch) outputs of earlier runs."""
    work = tmp_path_factory.mktemp("layout")
    for entry in ROOT.iterdir():
        if entry.name not in ("results", ".snakemake", ".git") and not entry.name.startswith(".venv"):
            (work / entry.name).symlink_to(entry)
    return work


@pytest.mark.parametrize("command", dry_run_subset(), ids=lambda c: c.where)
def test_commands_with_targets_dry_run(command, scratch):
    missing = missing_packages(command)
    if missing:
        pytest.skip(f"{command.where}: its config needs {', '.join(missing)} (not installed)")
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", *command.argv], cwd=scratch,
                          capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "SNAKEMAKE_PROFILE"})
    assert proc.returncode == 0, f"{command.where}: `{command.shown}` fails its dry run:\n{proc.stderr[-2000:]}"
