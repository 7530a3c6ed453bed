"""Table 1: the design, exchange x competition, filled from the configured methods.

The paper's Table 1 is a 2x2: rows no competition / competition, columns no
exchange / exchange, with vanilla GRPO, cooperative exchange, the shared rival
(inert by construction) and Agon in its cells; the honest "competition without
visible exchange" cell (a per-rollout rival whose draft is hidden) is left empty.
Here every cell is filled from the `methods` knobs of the run's config, so the
table says which configured method occupies which cell:

  kind grpo                      no exchange, no competition
  kind pair, roles self          a training control (self-refine), outside the 2x2
  kind pair otherwise            competition iff mode is adv or margin;
                                 exchange iff exchange is visible (hidden: the
                                 draft only enters the reward; shared: one
                                 group-constant rival)
  any other kind                 where its registration's `classify` puts it
                                 (agon.rl.methods.MethodKind)

A method's other knobs (margin reward, fixed roles, a length tie-break, a hidden
or shared rival) are printed beside its name; a method without a published
number in config/reported.yaml is marked `not in the paper`. Evaluations that
are controls at inference (MoA, a GRPO self-cascade, one adapter of a pair on
its own) are listed under the matrix, with the bare base as the reference.
"""

from __future__ import annotations

from pathlib import Path

from .. import io
from ..rl.methods import kind_of
from . import tables as tables_mod

EXCHANGE = ("no exchange", "exchange")
COMPETITION = ("no competition", "competition")
PAPER_CELLS = {
    ("no competition", "no exchange"): "vanilla GRPO",
    ("no competition", "exchange"): "cooperative (Eq. 2)",
    ("competition", "no exchange"): "shared rival (inert by construction); per-rollout hidden rival left empty",
    ("competition", "exchange"): "Agon (Eq. 3)",
}
COLUMNS = ["name", "type", "role", "competition", "exchange", "qualifiers", "knobs", "in_paper",
           "paper_cell", "description"]
NOT_IN_PAPER = "not in the paper"


def _knobs(spec: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in spec.items())


def classify_method(m: dict) -> tuple[str, str | None, str | None, list[str]]:
    """(role, competition, exchange, qualifiers) of one training method: its kind's registration says."""
    role, competition, exchange, qualifiers = kind_of(m["kind"]).classify(m)
    return role, competition, exchange, list(qualifiers)


def classify_evaluation(ev: dict, methods: dict) -> tuple[str, str] | None:
    """(role, what it is) of an evaluation that is a control or the reference; else None."""
    method = methods.get(ev["method"]) if ev["method"] else None
    policies = ev["policies"]
    if ev["protocol"] == "moa":
        return "inference control", ("untrained " if method is None else "") + \
            "mixture of agents: two agents answer, then one refines its own attempt after reading the other's"
    if method is None and ev["protocol"] == "single":
        return "reference", "the untrained base, one pass"
    if method is None:
        return "inference control", f"the untrained base, {ev['protocol']}"
    kind = kind_of(method["kind"])
    if ev["protocol"] == "cascade" and len(set(policies)) == 1 and kind.deployment(method) == "single":
        return "inference control", "two-pass self-cascade: the trained policy refines its own first pass"
    if ev["protocol"] == "single" and kind.deployment(method) == "cascade" and len(kind.adapters(method)) == 2:
        return "inference control", f"adapter {policies[0]} of the {ev['method']} pair alone, plain prompt"
    return None


def _published(reported: dict | None, name: str) -> bool | None:
    if reported is None:
        return None
    for table in reported["tables"].values():
        for benches in table["results"].values():
            for methods in benches.values():
                if name in methods:
                    return True
    return False


def design_rows(methods: dict, evaluations: dict, reported: dict | None = None) -> list[dict]:
    descriptions = (reported or {}).get("keys", {}).get("methods", {})
    rows = []
    for name, m in methods.items():
        role, competition, exchange, qualifiers = classify_method(m)
        published = _published(reported, name)
        rows.append({"name": name, "type": "method", "role": role, "competition": competition or "",
                     "exchange": exchange or "", "qualifiers": "; ".join(qualifiers), "knobs": _knobs(m),
                     "in_paper": "" if published is None else ("yes" if published else "no"),
                     "paper_cell": PAPER_CELLS.get((competition, exchange), ""),
                     "description": descriptions.get(name, "")})
    for name, ev in evaluations.items():
        kind = classify_evaluation(ev, methods)
        if kind is None:
            continue
        published = _published(reported, name)
        rows.append({"name": name, "type": "evaluation", "role": kind[0], "competition": "",
                     "exchange": "", "qualifiers": kind[1], "knobs": _knobs(ev),
                     "in_paper": "" if published is None else ("yes" if published else "no"),
                     "paper_cell": "", "description": descriptions.get(name, "")})
    return rows


def _label(r: dict) -> str:
    parts = [q for q in r["qualifiers"].split("; ") if q] if r["role"] == "2x2 cell" else []
    if r["in_paper"] == "no":
        parts.append(NOT_IN_PAPER)
    return r["name"] + (f" ({'; '.join(parts)})" if parts else "")


def matrix(rows: list[dict]) -> list[list[str]]:
    """The 2x2 as text: [[competition label, no-exchange cell, exchange cell], ...]."""
    out = []
    for competition in COMPETITION:
        line = [competition]
        for exchange in EXCHANGE:
            names = [_label(r) for r in rows if r["role"] == "2x2 cell"
                     and r["competition"] == competition and r["exchange"] == exchange]
            line.append("; ".join(names) if names else "(empty: no configured method)")
        out.append(line)
    return out


def controls(rows: list[dict]) -> list[list[str]]:
    return [[_label(r), r["role"], r["qualifiers"]] for r in rows if r["role"] != "2x2 cell"]


NOTE = ("Cells from the configured methods' knobs (kind, mode, exchange, roles, gamma); "
        "`not in the paper`: no published number in config/reported.yaml. The paper's cells: "
        + "; ".join(f"{c} x {e}: {v}" for (c, e), v in PAPER_CELLS.items()) + ".")


def to_markdown(title: str, rows: list[dict]) -> str:
    lines = [f"# {title}", ""] + tables_mod.md_table(["", *EXCHANGE], matrix(rows))
    ctrl = controls(rows)
    if ctrl:
        lines += ["", "Controls and reference:", ""] + tables_mod.md_table(["name", "role", "what it is"], ctrl)
    lines += ["", NOTE]
    return "\n".join(lines) + "\n"


def to_tex(title: str, rows: list[dict], label: str) -> str:
    body = matrix(rows)
    ctrl = controls(rows)
    body += [[f"{c[1]}: {c[0]}: {c[2]}"] for c in ctrl]
    return tables_mod.tex_table(title, label, ["", *EXCHANGE], ["l", "p{0.4\\linewidth}", "p{0.4\\linewidth}"],
                                body, [NOTE], rules_after=(1,))


def write_design(spec: dict, out_prefix, reported_path=None) -> list[dict]:
    """Table 1 from `spec` (title, methods, evaluations, optional method_order and
    evaluation_order: the config's order): <out_prefix>.csv, .md, .tex."""
    from . import reported as reported_mod

    reported = reported_mod.load_reported(reported_path) if reported_path else None
    order = lambda d, keys: {k: d[k] for k in keys} if keys else d  # noqa: E731 (config order)
    rows = design_rows(order(spec["methods"], spec.get("method_order")),
                       order(spec["evaluations"], spec.get("evaluation_order")), reported)
    out_prefix = Path(out_prefix)
    io.write_csv(str(out_prefix) + ".csv", rows, COLUMNS)
    io.write_text(str(out_prefix) + ".md", to_markdown(spec["title"], rows))
    io.write_text(str(out_prefix) + ".tex", to_tex(spec["title"], rows, out_prefix.name))
    return rows
