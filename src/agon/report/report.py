"""The run report: one markdown file that says what ran, what came out, and from where.

`render_report` is a pure function of its inputs (no clock, no environment), so the
same results always give the same report; `write_report` writes it atomically.
"""

from __future__ import annotations

import yaml

from .. import io

MISSING = "-"


def _cell(value) -> str:
    """A markdown table cell: `-` for missing values, pipes and newlines escaped."""
    if value is None or value == "":
        return MISSING
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(head: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def _scalar(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_scalar(v)}" for k, v in value.items()) + "}"
    return str(value)


def _knobs(spec: dict, skip: tuple[str, ...]) -> str:
    parts = [f"{k}={_scalar(v)}" for k, v in spec.items() if k not in skip]
    return ", ".join(parts) if parts else MISSING


def _what_ran(config: dict) -> list[str]:
    out = ["## What ran", ""]
    out.append(f"- **Run:** `{config.get('run', MISSING)}`")
    seeds = config.get("seeds")
    out.append(f"- **Seeds:** {', '.join(str(s) for s in seeds) if seeds else MISSING}")
    models = config.get("models") or {}
    out.append(f"- **Models:** {', '.join(f'`{m}`' for m in models) if models else MISSING}")
    out.append("")
    if models:
        out += ["### Models", ""]
        rows = []
        for name, spec in models.items():
            spec = spec or {}
            # nested blocks (e.g. the toy model's `base` training recipe) are in the full config
            flat = {k: v for k, v in spec.items() if not isinstance(v, dict)}
            rows.append([f"`{name}`", spec.get("kind"), _knobs(flat, ("kind",))])
        out += _table(["model", "kind", "settings"], rows) + [""]
    methods = config.get("methods") or {}
    out += ["### Training methods", ""]
    if methods:
        out += _table(["method", "kind", "knobs"],
                      [[f"`{n}`", (s or {}).get("kind"), _knobs(s or {}, ("kind",))]
                       for n, s in methods.items()]) + [""]
    else:
        out += ["None.", ""]
    evaluations = config.get("evaluations") or {}
    out += ["### Evaluations", ""]
    if evaluations:
        rows = []
        for name, spec in evaluations.items():
            spec = spec or {}
            method = spec.get("method")
            policies = spec.get("policies") or []
            rows.append([f"`{name}`", "base model (untrained)" if method is None else f"`{method}`",
                         spec.get("protocol"),
                         " -> ".join("base" if p is None else str(p) for p in policies),
                         _knobs(spec, ("method", "protocol", "policies"))])
        out += _table(["evaluation", "trained by", "protocol", "policies (per stage)", "other"],
                      rows) + [""]
    else:
        out += ["None.", ""]
    benchmarks = config.get("benchmarks") or {}
    out += ["### Benchmarks", ""]
    if benchmarks:
        out += _table(["benchmark", "settings"],
                      [[f"`{n}`", _knobs(s or {}, ())] for n, s in benchmarks.items()]) + [""]
    else:
        out += ["None.", ""]
    return out


def _demote_headings(text: str, by: int = 2) -> str:
    """Shift markdown headings down `by` levels (a table's `# title` becomes `### title`),
    leaving fenced code blocks alone, so embedded tables nest under the report's sections."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            hashes = len(line) - len(line.lstrip("#"))
            if line[hashes:hashes + 1] in (" ", ""):
                line = "#" * min(6, hashes + by) + line[hashes:]
        lines.append(line)
    return "\n".join(lines)


def _image_path(path: str) -> str:
    return f"<{path}>" if any(c in path for c in " ()") else path


def _provenance(provenance: list[dict]) -> list[str]:
    out = ["## Provenance", ""]
    if not provenance:
        return out + ["No provenance records were given.", ""]
    rows = []
    for p in provenance:
        packages = p.get("packages") or {}
        rows.append([f"`{p.get('file', MISSING)}`", p.get("git_commit"), p.get("config_hash"),
                     p.get("device"), packages.get("torch"), packages.get("transformers"),
                     packages.get("peft")])
    out += _table(["file", "git commit", "config hash", "device", "torch", "transformers", "peft"],
                  rows) + [""]
    commits = sorted({str(p.get("git_commit")) for p in provenance})
    hashes = sorted({str(p.get("config_hash")) for p in provenance})
    if len(commits) > 1:
        out.append(f"**Warning:** these files come from {len(commits)} different code versions "
                   f"({', '.join(commits)}).")
    if any(c.endswith("-dirty") for c in commits):
        out.append("**Warning:** some files were produced from a working tree with uncommitted "
                   "changes (`-dirty`).")
    if len(hashes) > 1:
        out.append(f"Config hashes differ between files ({len(hashes)} distinct); each hash "
                   "covers the config slice that file depends on.")
    if out[-1] != "":
        out.append("")
    return out


def _embedded(name: str, text: str, by: int) -> list[str]:
    return [f"<!-- table: {name} -->", _demote_headings(text.rstrip("\n"), by), ""]


def render_report(*, title: str, config: dict, tables: dict[str, str], figures: dict[str, str],
                  provenance: list[dict], notes: list[str], headline: list[str] = ()) -> str:
    """The report as markdown text (see `write_report`)."""
    out = [f"# {title}", ""]
    for name in headline:  # the paper's claims: what a reader wants first
        out += _embedded(name, tables[name], 1)
    out += _what_ran(config)
    out += ["## Tables", ""]
    rest = {name: text for name, text in tables.items() if name not in headline}
    if rest:
        for name, text in rest.items():
            out += _embedded(name, text, 2)
    else:
        out += ["No tables.", ""]
    out += ["## Figures", ""]
    if figures:
        for caption, path in figures.items():
            alt = caption.replace("[", "(").replace("]", ")").replace("\n", " ")
            out += [f"![{alt}]({_image_path(path)})", "", f"*{caption}*", ""]
    else:
        out += ["No figures.", ""]
    out += _provenance(provenance)
    out += ["## Notes", ""]
    out += [f"- {note}" for note in notes] if notes else ["None."]
    out += ["", "## Full config", "", "```yaml",
            yaml.safe_dump(config, sort_keys=False, default_flow_style=False,
                           allow_unicode=True).rstrip("\n"),
            "```", ""]
    return "\n".join(out)


def write_report(out_path, *, title: str, config: dict, tables: dict[str, str],
                 figures: dict[str, str], provenance: list[dict], notes: list[str],
                 headline: list[str] = ()) -> str:
    """Write the markdown run report to `out_path` atomically; returns the text.

    Sections: title; the `headline` tables (the paper's claims), each as a section of its own;
    "What ran" (run name, seeds, models, training methods with their
    knobs, evaluations, benchmarks, from `config`); every table in the given order
    (table name -> markdown, headings nested under the section); every figure as an
    image with its caption (caption -> path relative to the report); "Provenance"
    (file, git commit, config hash, device, torch/transformers/peft, from
    agon.io.provenance() dicts with a "file" key, with a warning when code versions
    differ or are dirty); the notes; and the full config as a fenced YAML block.
    """
    text = render_report(title=title, config=config, tables=tables, figures=figures,
                         provenance=provenance, notes=notes, headline=headline)
    io.write_text(out_path, text)
    return text
