"""Figures 7a and 7b: pass@1 against final-stage length, and pass@1 during training.

Both figures are drawn on a bare `Figure` (Agg canvas, no pyplot state, no display)
under a fixed style, and saved atomically as PNG and PDF. The output is a pure
function of the input: PNG carries no software tag and PDF no dates, so the same
input gives byte-identical files on the same matplotlib version.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from .. import io  # noqa: E402
from ..evaluate.stats import clopper_pearson  # noqa: E402
from . import numbers  # noqa: E402
from . import reported as _reported  # noqa: E402

OURS = "#1f77b4"    # our runs
PAPER = "#d62728"   # the paper's published values
METHOD_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                  "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
MODEL_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
SEED_STYLES = ["-", "--", ":", "-."]

# A fixed style, so a caller's rcParams cannot change the bytes we write.
_STYLE = {
    "font.family": "DejaVu Sans", "font.size": 9, "axes.titlesize": 10,
    "axes.labelsize": 9, "legend.fontsize": 8, "savefig.dpi": 150,
    "figure.dpi": 100, "pdf.fonttype": 42, "axes.grid": True, "grid.alpha": 0.3,
    "path.simplify": True,
}
_PNG_META = {"Software": None}
_PDF_META = {"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None}

# The x axis switches to a log scale when lengths span more than this ratio
# (e.g. toy-model lengths of ~30 tokens next to the paper's 3.5k-8.1k).
LOG_X_RATIO = 20.0


def _save(fig: Figure, out_prefix) -> tuple[str, str]:
    out_prefix = str(out_prefix)
    paths = (out_prefix + ".png", out_prefix + ".pdf")
    for path, fmt, meta in ((paths[0], "png", _PNG_META), (paths[1], "pdf", _PDF_META)):
        with io.atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, metadata=meta)
    return paths


def _message_figure(title: str, message: str, xlabel: str, ylabel: str) -> Figure:
    fig = Figure(figsize=(6.4, 4.4))
    ax = fig.add_subplot()
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes,
            fontsize=11, color="#555555")
    fig.tight_layout()
    return fig


def _ordered_unique(values) -> list:
    seen: dict = {}
    for v in values:
        seen.setdefault(v, None)
    return list(seen)


# --- Figure 7a ---------------------------------------------------------------

def paper_points(reported: dict, model: str = "qwen3-0.6b", benchmark: str = "deepmath_hard",
                 table: str = "table3_main", ci_table: str | None = "table4_ci") -> list[dict]:
    """The paper's (method, pass@1 %, mean length[, CI %]) points for `pass_vs_length`.

    Only methods with both a published pass@1 and a published length are returned
    (a point without a length cannot be placed); nothing is inferred.
    """
    out = []
    methods = reported["tables"][table]["results"].get(model, {}).get(benchmark, {})
    for method in methods:
        p = _reported.lookup(reported, table, model, benchmark, method, "pass_at_1")
        length = _reported.lookup(reported, table, model, benchmark, method, "mean_length")
        if p is None or length is None:
            continue
        point = {"method": method, "pass_at_1": p, "mean_length": length}
        if ci_table is not None:
            low = _reported.lookup(reported, ci_table, model, benchmark, method, "ci_low")
            high = _reported.lookup(reported, ci_table, model, benchmark, method, "ci_high")
            if low is not None and high is not None:
                point.update(ci_low=low, ci_high=high)
        out.append(point)
    return out


def _group_rows(rows: list[dict]) -> list[tuple[tuple[str, str], list[dict]]]:
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["method"], r["model"]), []).append(r)
    out = []
    for key, members in groups.items():
        seeds = [m["seed"] for m in members]
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"pass_vs_length: {key[0]}/{key[1]} has duplicate seeds "
                             f"{sorted(seeds)}"
                             " (rows from more than one benchmark?)")
        out.append((key, sorted(members, key=lambda m: m["seed"])))
    return out


def pass_vs_length(rows: list[dict], out_prefix, title: str, reported: list[dict] | None = None,
                   reported_label: str = "paper (Qwen3-0.6B)") -> tuple[str, str]:
    """Figure 7a: pass@1 (%) against mean final-stage length (tokens), one point per
    (method, model); this run's points in one panel and the paper's in a second, each with
    its own length axis (the toy world's lengths are ~100x shorter than the paper's, so one
    shared axis would crush one of the two), and the same pass@1 axis.

    rows: table rows (agon.report.tables): method, model, seed, pass_at_1 / ci_low /
    ci_high as fractions, mean_length in tokens. One seed: the point with its 95% CI
    as vertical bars. Several seeds: each seed faint with its CI, and the mean over
    seeds bold with bars spanning the seeds' min..max on both axes.
    reported: the paper's points [{method, pass_at_1 (percent), mean_length,
    optional ci_low/ci_high (percent)}], drawn hollow in a second colour under
    `reported_label`. Labels are placed where they overlap no other label or point.
    Writes <out_prefix>.png and .pdf; returns their paths.
    """
    reported = [p for p in (reported or [])
                if p.get("pass_at_1") is not None and p.get("mean_length") is not None]
    xlabel = "mean final-stage length (tokens)"
    ylabel = "pass@1 (%)"
    with matplotlib.rc_context(_STYLE):
        if not rows and not reported:
            fig = _message_figure(title, "no evaluation rows", xlabel, ylabel)
            return _save(fig, out_prefix)
        panels = [name for name, present in (("ours", rows), ("paper", reported)) if present]
        fig = Figure(figsize=(6.4 * len(panels), 4.8))
        axes = dict(zip(panels, fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]))
        drawn = {}
        if rows:
            drawn["ours"] = _draw_our_points(axes["ours"], rows)
        if reported:
            drawn["paper"] = _draw_paper_points(axes["paper"], reported, reported_label)
        ys_all = [y for _, _, ys, _ in drawn.values() for y in ys]
        lo, hi = min(ys_all), max(ys_all)
        pad = max(3.0, 0.08 * (hi - lo))
        for name, ax in axes.items():
            labels, xs, _, handles = drawn[name]
            label = xlabel
            if xs and min(xs) > 0 and max(xs) / min(xs) > LOG_X_RATIO:
                ax.set_xscale("log")
                label += " - log scale"
            ax.set_ylim(max(-1.0, lo - pad), min(101.0, hi + pad))
            ax.set_xlabel(label)
            ax.set_title("this run" if name == "ours" else reported_label, fontsize=10)
            ax.margins(x=0.15)
            ax.legend(handles=handles, loc="best", frameon=True)
        axes[panels[0]].set_ylabel(ylabel)
        fig.suptitle(title)
        fig.tight_layout()
        for name, ax in axes.items():
            _place_labels(fig, ax, drawn[name][0])
        return _save(fig, out_prefix)


def _draw_our_points(ax, rows: list[dict]):
    """This run's points on `ax`: (labels, xs, ys, legend handles)."""
    groups = _group_rows(rows)
    models = _ordered_unique(k[1] for k, _ in groups)
    marker = {m: MODEL_MARKERS[i % len(MODEL_MARKERS)] for i, m in enumerate(models)}
    several_models = len(models) > 1
    any_multi_seed = any(len(members) > 1 for _, members in groups)
    xs_all: list[float] = []
    ys_all: list[float] = []
    labels: list[tuple[str, float, float, int, str]] = []
    for (method, model), members in groups:
        label = f"{method} ({model})" if several_models else method
        mk = marker[model]
        if len(members) == 1:
            r = members[0]
            x, y = float(r["mean_length"]), 100 * r["pass_at_1"]
            ax.errorbar([x], [y], yerr=[[y - 100 * r["ci_low"]], [100 * r["ci_high"] - y]],
                        fmt=mk, color=OURS, ms=6, capsize=3, elinewidth=1, zorder=3)
            ys_all += [100 * r["ci_low"], 100 * r["ci_high"]]
        else:
            for r in members:
                x1, y1 = float(r["mean_length"]), 100 * r["pass_at_1"]
                ax.errorbar([x1], [y1],
                            yerr=[[y1 - 100 * r["ci_low"]], [100 * r["ci_high"] - y1]],
                            fmt=mk, color=OURS, alpha=0.25, ms=4, capsize=2, elinewidth=0.8,
                            zorder=2)
                xs_all.append(x1)
                ys_all += [100 * r["ci_low"], 100 * r["ci_high"]]
            lx = [float(r["mean_length"]) for r in members]
            ly = [100 * r["pass_at_1"] for r in members]
            x, y = statistics.fmean(lx), statistics.fmean(ly)
            # the mean of equal values can round past them (fmean of three 52.3625 is 52.36249999999999):
            # a bar's side is never below 0
            ax.errorbar([x], [y], xerr=[[max(0.0, x - min(lx))], [max(0.0, max(lx) - x)]],
                        yerr=[[max(0.0, y - min(ly))], [max(0.0, max(ly) - y)]], fmt=mk, color=OURS, ms=7,
                        mec="black", mew=0.8, capsize=4, elinewidth=1.6, zorder=4)
            label += f" ({len(members)} seeds)"
        xs_all.append(x)
        ys_all.append(y)
        labels.append((label, x, y, 8, "#0b3d66"))
    handles = [Line2D([], [], marker="o", ls="-", color=OURS, label="this run (bars: 95% CI)")]
    if any_multi_seed:
        handles.append(Line2D([], [], marker="o", ls="-", color=OURS, mec="black", lw=1.6,
                              label="mean over seeds (bars: seed min-max)"))
    if several_models:
        handles += [Line2D([], [], marker=marker[m], ls="none", color=OURS, label=m) for m in models]
    return labels, xs_all, ys_all, handles


def _draw_paper_points(ax, reported: list[dict], reported_label: str):
    """The paper's points on `ax`, hollow: (labels, xs, ys, legend handles)."""
    xs_all: list[float] = []
    ys_all: list[float] = []
    labels: list[tuple[str, float, float, int, str]] = []
    for p in reported:
        x, y = float(p["mean_length"]), float(p["pass_at_1"])
        kwargs = {}
        if p.get("ci_low") is not None and p.get("ci_high") is not None:
            kwargs["yerr"] = [[y - p["ci_low"]], [p["ci_high"] - y]]
            ys_all += [float(p["ci_low"]), float(p["ci_high"])]
        ax.errorbar([x], [y], fmt="o", mfc="none", mec=PAPER, color=PAPER, ms=7, mew=1.4,
                    capsize=3, elinewidth=0.8, alpha=0.9, zorder=3, **kwargs)
        labels.append((p["method"], x, y, 7, PAPER))
        xs_all.append(x)
        ys_all.append(y)
    handles = [Line2D([], [], marker="o", ls="none", mfc="none", mec=PAPER, mew=1.4, label=reported_label)]
    return labels, xs_all, ys_all, handles


# Candidate label offsets (points), tried in order: right, then above/below, then left.
_OFFSETS = [(6, 4), (6, -11), (6, 13), (6, -20), (-6, 4), (-6, -11), (6, 22), (6, -29),
            (-6, 13), (-6, -20), (6, 31), (6, -38)]


def _place_labels(fig: Figure, ax, labels: list[tuple[str, float, float, int, str]]) -> None:
    """Annotate points, choosing for each label the first offset whose text box overlaps
    neither an earlier label nor any point marker (falls back to the first offset)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.transforms import Bbox

    renderer = FigureCanvasAgg(fig).get_renderer()
    to_px = ax.transData.transform
    r = 5 * fig.dpi / 72  # marker half-size in pixels
    markers = [Bbox.from_extents(px - r, py - r, px + r, py + r)
               for px, py in (to_px((x, y)) for _, x, y, _, _ in labels)]
    axes_box = ax.get_window_extent(renderer)
    placed: list = []
    legend = ax.get_legend()
    if legend is not None:
        placed.append(legend.get_window_extent(renderer))
    for text, x, y, size, colour in labels:
        chosen = None
        for dx, dy in _OFFSETS:
            ann = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points",
                              fontsize=size, color=colour, zorder=5,
                              ha="left" if dx > 0 else "right", va="bottom")
            box = ann.get_window_extent(renderer)
            clash = (any(box.overlaps(b) for b in placed) or any(box.overlaps(m) for m in markers)
                     or not (axes_box.x0 <= box.x0 and box.x1 <= axes_box.x1
                             and axes_box.y0 <= box.y0 and box.y1 <= axes_box.y1))
            if not clash:
                chosen = box
                if (dx, dy) != _OFFSETS[0]:
                    # a displaced label gets a thin leader line to its point
                    ann.remove()
                    ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points",
                                fontsize=size, color=colour, zorder=5,
                                ha="left" if dx > 0 else "right", va="bottom",
                                arrowprops={"arrowstyle": "-", "color": colour, "lw": 0.5,
                                            "alpha": 0.7, "shrinkA": 0, "shrinkB": 3})
                break
            ann.remove()
        if chosen is None:
            dx, dy = _OFFSETS[0]
            ann = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points",
                              fontsize=size, color=colour, zorder=5, ha="left", va="bottom")
            chosen = ann.get_window_extent(renderer)
        placed.append(chosen)


# --- Figure 7b ---------------------------------------------------------------

def training_curves(points: list[dict], out_prefix, title: str) -> tuple[str, str]:
    """Figure 7b: held-out pass@1 (%) of checkpoints evaluated during training.

    points: [{method, seed, step, k, n}] - one checkpoint evaluation each. pass@1 =
    k/n and the shaded band is its 95% Clopper-Pearson interval, both computed here
    from k and n. One line per (method, seed); all seeds of a method share its colour
    and differ in line style. No points -> a figure saying so (small configs may not
    evaluate during training). Writes <out_prefix>.png and .pdf; returns their paths.
    """
    xlabel, ylabel = "optimizer step", "held-out pass@1 (%)"
    with matplotlib.rc_context(_STYLE):
        if not points:
            fig = _message_figure(title, "no checkpoint evaluations in this run", xlabel, ylabel)
            return _save(fig, out_prefix)
        lines: dict[tuple[str, int], dict[int, dict]] = {}
        for p in points:
            key = (p["method"], p["seed"])
            steps = lines.setdefault(key, {})
            if p["step"] in steps:
                raise ValueError(f"training_curves: {p['method']} seed {p['seed']} has two "
                                 f"evaluations at step {p['step']}")
            steps[p["step"]] = p
        methods = _ordered_unique(p["method"] for p in points)
        colour = {m: METHOD_COLOURS[i % len(METHOD_COLOURS)] for i, m in enumerate(methods)}
        seeds_of = {m: sorted({s for (mm, s) in lines if mm == m}) for m in methods}

        fig = Figure(figsize=(6.4, 4.4))
        ax = fig.add_subplot()
        all_y: list[float] = []
        for method in methods:
            for i, seed in enumerate(seeds_of[method]):
                evals = [lines[(method, seed)][s] for s in sorted(lines[(method, seed)])]
                xs = [e["step"] for e in evals]
                ys, lows, highs = [], [], []
                for e in evals:
                    low, high = clopper_pearson(int(e["k"]), int(e["n"]))
                    ys.append(100 * e["k"] / e["n"])
                    lows.append(100 * low)
                    highs.append(100 * high)
                all_y += lows + highs
                several = len(seeds_of[method]) > 1
                label = f"{method} (seed {seed})" if several else method
                ax.fill_between(xs, lows, highs, color=colour[method],
                                alpha=0.10 if several else 0.18, lw=0, zorder=1)
                ax.plot(xs, ys, SEED_STYLES[i % len(SEED_STYLES)], color=colour[method],
                        marker="o", ms=3.5, lw=1.5, label=label, zorder=3)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        lo, hi = min(all_y), max(all_y)
        pad = max(3.0, 0.08 * (hi - lo))
        ax.set_ylim(max(-1.0, lo - pad), min(101.0, hi + pad))
        ax.legend(loc="best", frameon=True, title="bands: 95% CI", title_fontsize=7)
        fig.tight_layout()
        return _save(fig, out_prefix)


# --- per-step training curves of every cell (from metrics.jsonl) ---------------------------

def _truncated_share(stats: dict) -> float | None:
    if "truncated_share" in stats:
        return stats["truncated_share"]
    return stats["truncated"] / stats["rollouts"] if stats.get("rollouts") else None


# One column per metric: (title, key of Table 0 section 7's verdict or None, reader of a stream's stats).
TRAINING_COLUMNS = [
    ("reward", "reward", lambda s: s.get("reward")),
    ("pass rate", "pass_rate", lambda s: s.get("pass_rate")),
    ("challenger conversion rate", "conversion_rate", lambda s: s.get("conversion_rate")),
    ("challenger's checking reads (share)", "verifying_share", lambda s: s.get("verifying_share")),
    ("mean length (tokens)", None, lambda s: s.get("mean_length")),
    ("truncated (share)", None, _truncated_share),
    ("update KL per token", None, lambda s: s.get("update_kl")),
]
# Drawn only where some stream logs it (a world that marks a read checking the rival's steps).
OPTIONAL_COLUMNS = {"verifying_share"}
# TensorBoard's smoothing: an exponential moving average over a stream's own steps, debiased at the
# start, its weight set by the run's length: a span of a twelfth of the steps, at most SMOOTHING.
# 0.78 on a 96-step run keeps its trend (GRPO's pass rate) and damps the per-step noise threefold;
# a 16-step run is barely smoothed, where a heavy average would lag its few points.
SMOOTHING = 0.8


def smoothing_weight(steps: int) -> float:
    span = max(1.0, steps / 12)
    return min(SMOOTHING, round(1 - 2 / (span + 1), 2))
# A stream's colour: its adapter's hue, a lighter one for its challenger role; dashes for a challenger.
STREAM_COLOURS = {("A", False): "#1f77b4", ("A", True): "#17becf", ("B", False): "#ff7f0e", ("B", True): "#d62728"}
VERDICT_MARK = {"yes": " meets", "no": " NOT MET", "": ""}  # "": a metric with no target
COMPACT_MARK = {"yes": " \u2713", "no": " \u2717", "": ""}   # check and cross, where seeds share a line


def smooth(values: list[float], weight: float) -> list[float]:
    """Debiased exponential moving average (TensorBoard's): the first point is the first value."""
    out, last, norm = [], 0.0, 0.0
    for v in values:
        last, norm = weight * last + (1 - weight) * v, weight * norm + (1 - weight)
        out.append(last / norm)
    return out


def _stream_label(stream: str) -> str:
    role, _, adapter = stream.partition(":")
    return f"{role} {adapter}".strip()


def _stream_style(stream: str, order: list[str]) -> tuple[str, str]:
    role, _, adapter = stream.partition(":")
    challenger = role == "challenger"
    colour = STREAM_COLOURS.get((adapter, challenger),
                                METHOD_COLOURS[order.index(stream) % len(METHOD_COLOURS)])
    return colour, "--" if challenger else "-"


def _points(history: list[dict], stream: str, read) -> tuple[list[int], list[float]]:
    """(steps, values) of one stream where the metric exists and is finite (a NaN diagnostic is a gap)."""
    steps, values = [], []
    for record in history:
        stats = record["streams"].get(stream)
        value = read(stats) if stats is not None else None
        if value is not None and math.isfinite(value):
            steps.append(record["step"])
            values.append(float(value))
    return steps, values


def _verdict_text(v: dict, interval: bool = True) -> str:
    """last - first [interval] and the verdict; without the interval where several seeds share a line."""
    if not v["resolved"]:
        what = "cannot resolve a rise" if v["target"].startswith("cannot resolve a rise") else "cannot resolve"
        return f"{what} ({v['n_first']}+{v['n_last']} values)"
    diff = numbers.fixed(v["difference"], 3, sign=True)
    if not interval:
        return diff + COMPACT_MARK[v["meets"]]
    ci = (f" [{numbers.fixed(v['ci'][0], 3, sign=True)}, {numbers.fixed(v['ci'][1], 3, sign=True)}]"
          if v["ci"] else "")
    return f"{diff}{ci}{VERDICT_MARK[v['meets']]}"


def _mark_verdict(ax, v: dict, colour: str, lw: float) -> None:
    """Section 7's windows on the panel: each window's mean as a bar over its steps, and at the last
    window the difference's interval placed on the first window's mean (where the last mean may lie)."""
    (a0, a1), (b0, b1) = v["windows"]
    for (x0, x1), y in (((a0, a1), v["first"]), ((b0, b1), v["last"])):
        if y is not None:
            ax.plot([x0, x1], [y, y], color=colour, lw=lw, solid_capstyle="butt", zorder=4, gid="verdict")
    if v["ci"] is not None:
        x = (b0 + b1) / 2
        ax.plot([x, x], [v["first"] + v["ci"][0], v["first"] + v["ci"][1]], color=colour, lw=lw / 2,
                marker="_", ms=6, zorder=4, gid="verdict")


def training_figure(model: str, cells: dict[tuple[str, int], list[dict]], blind=()) -> Figure:
    """One model's training curves as small multiples: a row per method, a column per metric
    (TRAINING_COLUMNS), every stream of the method in its panel (legend: role and adapter), axes
    shared within a column. Each stream's raw per-step values are faint dots under their
    exponential moving average (SMOOTHING); with several seeds each seed's average is thin and
    their mean bold over a band from the lowest to the highest seed. Where Table 0's section 7
    gives a stream a verdict (preconditions.stream_verdicts, the table's own numbers), its first and
    last windows' means are bars on the panel, the interval of their difference stands on the last
    window, and the difference, interval and verdict are written in the stream's colour.

    cells: {(method, seed): metrics.jsonl records}; blind: the methods whose challenger reads no
    draft (no target for its conversion rate). Returns the Figure (nothing written)."""
    with matplotlib.rc_context(_STYLE):  # fonts are fixed when the artists are made
        return _training_figure(model, cells, blind)


def _training_figure(model: str, cells: dict[tuple[str, int], list[dict]], blind=()) -> Figure:
    from .preconditions import stream_verdicts

    methods = _ordered_unique(m for m, _ in cells)
    columns = [c for c in TRAINING_COLUMNS if c[1] not in OPTIONAL_COLUMNS
               or any(c[2](s) is not None for h in cells.values() for r in h for s in r["streams"].values())]
    ncols = len(columns)
    fig = Figure(figsize=(2.75 * ncols + 1.3, 1.9 * len(methods) + 1.3))
    axes = fig.subplots(len(methods), ncols, sharex=True, sharey="col", squeeze=False)
    several_seeds = any(len([s for m, s in cells if m == method]) > 1 for method in methods)
    weight = smoothing_weight(max(len(h) for h in cells.values()))
    for row, method in enumerate(methods):
        seeds = sorted(s for m, s in cells if m == method)
        histories = [cells[(method, s)] for s in seeds]
        # policy or drafter before challenger, then by adapter: the same order in every row
        streams = sorted(dict.fromkeys(k for h in histories for r in h for k in r["streams"]),
                         key=lambda k: (k.startswith("challenger:"), k.partition(":")[2], k))
        verdicts = [{(v["stream"], v["metric"]): v for v in stream_verdicts(h, reads=method not in blind)}
                    for h in histories]
        for col, (title, key, read) in enumerate(columns):
            ax = axes[row][col]
            lines = []
            for stream in streams:
                colour, ls = _stream_style(stream, streams)
                smoothed = []
                for history in histories:
                    xs, ys = _points(history, stream, read)
                    if not xs:
                        continue
                    ax.scatter(xs, ys, s=4, color=colour, alpha=0.25, lw=0, zorder=1)
                    smoothed.append(dict(zip(xs, smooth(ys, weight))))
                    ax.plot(xs, list(smoothed[-1].values()), ls, color=colour, lw=0.8 if len(seeds) > 1 else 1.6,
                            alpha=0.55 if len(seeds) > 1 else 1.0, zorder=3, label=_stream_label(stream)
                            if len(seeds) == 1 else None)
                if len(smoothed) > 1:
                    common = sorted(set.intersection(*(set(d) for d in smoothed)))
                    per_step = [[d[x] for d in smoothed] for x in common]
                    ax.fill_between(common, [min(v) for v in per_step], [max(v) for v in per_step],
                                    color=colour, alpha=0.15, lw=0, zorder=2)
                    ax.plot(common, [statistics.fmean(v) for v in per_step], ls, color=colour, lw=1.8, zorder=3,
                            label=_stream_label(stream))
                found = [vs[(stream, key)] for vs in verdicts if key and (stream, key) in vs]
                for v in found:
                    _mark_verdict(ax, v, colour, 3.0 if len(seeds) == 1 else 1.8)
                if found:
                    lines.append((f"{_stream_label(stream)}: " + " | ".join(_verdict_text(v, len(found) == 1) for v in found), colour))
            if not ax.lines and not ax.collections:
                ax.text(0.5, 0.5, "no stream has it", transform=ax.transAxes, ha="center", va="center",
                        fontsize=7, color="#888888")
            for i, (text, colour) in enumerate(lines):
                ax.text(0.02, 0.97 - 0.11 * i, text, transform=ax.transAxes, ha="left", va="top", fontsize=5.8,
                        color=colour, zorder=6, gid="verdict",
                        bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.75},
                        in_layout=False)
            if row == 0:
                ax.set_title(title)
            if row == len(methods) - 1:
                ax.set_xlabel("optimizer step")
            if col == 0:
                ax.set_ylabel(method, fontsize=10, fontweight="bold")
        axes[row][-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False, fontsize=7,
                             title=f"{method}: streams", title_fontsize=7)
    for col in range(ncols):  # headroom above the data in each column for the verdict lines
        lo, hi = axes[0][col].get_ylim()
        axes[0][col].set_ylim(lo, hi + 0.45 * (hi - lo))
    seeds_note = ("; several seeds: each seed's line thin, their mean bold over a band from the lowest to the "
                  "highest seed, and each seed's difference in turn (seeds in rising order; \u2713 meets, \u2717 does not; "
                  "intervals in Table 0)"
                  if several_seeds else "")
    fig.suptitle(f"Training curves - {model}: a row per method, a column per metric (per step, from metrics.jsonl)")
    fig.text(0.01, 0.005,
             f"Lines: exponential moving average (weight {weight}, debiased as TensorBoard's) of each stream's "
             f"steps over its raw values (dots){seeds_note}. Bars: Table 0 section 7's first and last windows "
             "(a quarter of the steps, wider where a quarter holds fewer than 4 values) and their means; the "
             "vertical bar: the difference's 95% interval placed on the first window's mean. Text: last - first "
             "[interval], and whether it meets its target (reward, conversion: does not fall; a lone policy's pass "
             "rate: rises, where each window holds 12 steps).", fontsize=7, ha="left", va="bottom", wrap=True)
    fig.tight_layout(rect=(0, 0.035, 1, 0.98))
    return fig


def cell_training_curves(model: str, cells: dict[tuple[str, int], list[dict]], out_prefix,
                         blind=()) -> tuple[str, str]:
    """training_figure of one model's cells, written as <out_prefix>.png and .pdf; no cells: a
    figure saying so."""
    with matplotlib.rc_context(_STYLE):
        if not cells:
            title = f"Training curves - {model} (per step, from metrics.jsonl)"
            return _save(_message_figure(title, "no trained cells for this model", "optimizer step", ""), out_prefix)
        return _save(training_figure(model, cells, blind), out_prefix)
