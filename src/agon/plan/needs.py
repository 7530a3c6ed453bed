"""What each table, pick, contrast, claim and figure reads: (evaluation, benchmark) pairs.

Pure functions of the validated config. A pick (a pair's direction chosen on
`select_on`) needs each of its candidates on the benchmark and on `select_on`.
"""

from __future__ import annotations

from .layout import UNTRAINED


def table_kind(config: dict, table: str) -> str:
    return config["tables"][table].get("kind", "results")


def table_models(config: dict, table: str) -> list[str]:
    """The table's models this run configures; the others render `absent at this scale`."""
    return [m for m in config["tables"][table].get("models", []) if m in config["models"]]


def table_benchmarks(t: dict) -> list[str]:
    """A table's benchmarks: `benchmarks`, or the one `benchmark` (one block of rows each); the claims
    table's, each claim's."""
    if t.get("kind") == "claims":
        from ..report.claims import needs

        return list(dict.fromkeys(b for _, b in needs(t)))
    return list(t.get("benchmarks") or [t["benchmark"]])


def row_needs(config: dict, rows, benchmarks, select_on) -> list[tuple[str, str]]:
    """(evaluation, benchmark) pairs of rows on benchmarks; a pick also needs its candidates on select_on."""
    picks = config.get("picks", {})
    needs = []
    for benchmark in benchmarks:
        for row in rows:
            for evaluation in picks.get(row, [row]):
                needs.append((evaluation, benchmark))
                if row in picks:
                    needs.append((evaluation, select_on))
    return list(dict.fromkeys(needs))


def table_needs(config: dict, table: str) -> list[tuple[str, str]]:
    """(evaluation, benchmark) pairs a table reads (none for Table 1, the design, or without a configured model)."""
    t = config["tables"][table]
    kind = table_kind(config, table)
    if kind == "design" or not table_models(config, table):
        return []
    select_on = t.get("select_on", "validation")
    if kind == "preconditions":  # Table 0: the evaluations it names, on its benchmark (and its transfer set)
        from ..report.preconditions import needs

        return needs(t)
    if kind == "contrasts":  # each contrast's two rows (a pick: its candidates)
        from ..report.contrasts import evaluations

        return row_needs(config, evaluations(t), [t["benchmark"]], select_on)
    if kind == "claims":  # each claim's rows on its benchmark (a pick: its candidates)
        from ..report.claims import needs

        return list(dict.fromkeys(n for row, bench in needs(t) for n in row_needs(config, [row], [bench], select_on)))
    return row_needs(config, t["rows"], table_benchmarks(t), select_on)


def blind_challengers(config: dict) -> list[str]:
    """The pair methods whose challenger never reads its rival's draft (exchange: shared or hidden):
    Table 0's section 7 and the training curves give their conversion rate no target."""
    return sorted(m for m, spec in config["methods"].items()
                  if spec["kind"] == "pair" and spec.get("exchange", "visible") != "visible")


def table_picks(config: dict, t: dict) -> dict[str, list[str]]:
    """The picks among a table's rows, contrasts and claims: {row: candidates}."""
    picks = config.get("picks", {})
    rows = (t.get("rows", []) + [x for c in t.get("contrasts", []) for x in c]
            + [c[k] for c in t.get("claims", []) for k in ("a", "b") if c.get(k)])
    return {row: picks[row] for row in rows if row in picks}


def cell_of(config: dict, evaluation: str) -> str:
    """The evaluation job (cell) that writes an evaluation's records: its method, or UNTRAINED."""
    return config["evaluations"][evaluation]["method"] or UNTRAINED


# --- Figure 7b ---------------------------------------------------------------------

def fig7b(config: dict) -> dict | None:
    return (config.get("figures") or {}).get("fig7b")


def fig7a_table(config: dict) -> str | None:
    """The results table Figure 7a plots: figures.fig7a.table, else the first results table."""
    return (config.get("figures") or {}).get("fig7a", {}).get("table") or next(
        (t for t in config["tables"] if table_kind(config, t) == "results"), None)


def figure_select_on(config: dict) -> str:
    return fig7b(config).get("select_on", "validation")


def figure_needs(config: dict) -> list[tuple[str, str]]:
    """(evaluation, benchmark) pairs Figure 7b reads from the evaluation jobs: step 0 (the
    untrained base), each row's final records and, for a pick, its candidates on select_on."""
    fig = fig7b(config)
    if not fig:
        return []
    return list(dict.fromkeys([(fig["step0"], fig["benchmark"])]
                              + row_needs(config, fig["rows"], [fig["benchmark"]], figure_select_on(config))))


def curve_candidates(config: dict, row: str) -> list[str] | None:
    return config.get("picks", {}).get(row)


def curve_method(config: dict, row: str) -> str:
    """The trained method a Figure 7b row evaluates (its candidates share it; config.py checks)."""
    return cell_of(config, config.get("picks", {}).get(row, [row])[0])


def eval_needs(config: dict, model: str, cell: str) -> list[tuple[str, str]]:
    """(evaluation, benchmark) pairs of one cell that some table or Figure 7b reads, in config order."""
    needs = []
    for table, t in config["tables"].items():
        if model in t.get("models", []):
            needs += [(e, b) for e, b in table_needs(config, table) if cell_of(config, e) == cell]
    fig = fig7b(config)
    if fig and model in fig["models"]:
        needs += [(e, b) for e, b in figure_needs(config) if cell_of(config, e) == cell]
    return list(dict.fromkeys(needs))
