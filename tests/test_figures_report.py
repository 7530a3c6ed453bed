"""Figures 7a/7b and the markdown run report."""

import statistics
from pathlib import Path

import pytest
import yaml

from agon.config import load as load_config

from agon.evaluate.stats import clopper_pearson
from agon.report import figures
from agon.report.reported import load_reported
from agon.report.report import render_report, write_report

ROOT = Path(__file__).resolve().parents[1]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def row(method, seed, k, n, length, model="toy"):
    low, high = clopper_pearson(k, n)
    return {"method": method, "model": model, "benchmark": "heldout", "seed": seed, "k": k,
            "n": n, "pass_at_1": k / n, "ci_low": low, "ci_high": high, "mean_length": length,
            "mean_total_tokens": 1.5 * length}


def check_written(paths, out_prefix):
    png, pdf = paths
    assert (png, pdf) == (str(out_prefix) + ".png", str(out_prefix) + ".pdf")
    assert Path(png).read_bytes()[:8] == PNG_MAGIC
    assert Path(pdf).read_bytes()[:5] == b"%PDF-"
    assert Path(png).stat().st_size > 1000 and Path(pdf).stat().st_size > 1000
    # atomic writes leave no temporary files behind
    assert not [p for p in Path(png).parent.iterdir() if p.name.startswith(".")]


@pytest.fixture
def captured(monkeypatch):
    """Capture the figure instead of rendering it, to inspect what was drawn."""
    figs = []
    monkeypatch.setattr(figures, "_save", lambda fig, prefix: figs.append(fig) or ("", ""))
    return figs


def texts(fig):
    out = []
    for ax in fig.axes:
        out += [t.get_text() for t in ax.texts]
        if ax.get_legend():
            out += [t.get_text() for t in ax.get_legend().get_texts()]
    return out


def test_scatter_one_row_writes_png_and_pdf(tmp_path):
    prefix = tmp_path / "fig7a"
    check_written(figures.pass_vs_length([row("grpo", 0, 12, 40, 30.5)], prefix, "7a"), prefix)


def test_scatter_draws_seeds_whose_equal_values_average_past_themselves(tmp_path):
    """Three seeds of one length (a single pass whose length the problem fixes): their mean,
    52.36249999999999, falls below each of them, and the seeds' bar still draws."""
    rows = [row("grpo", seed, k, 800, 52.3625) for seed, k in enumerate((437, 438, 434))]
    assert statistics.fmean([52.3625] * 3) < 52.3625
    prefix = tmp_path / "fig7a"
    check_written(figures.pass_vs_length(rows, prefix, "7a"), prefix)


def test_scatter_seeds_and_paper_points_are_drawn(captured):
    paper = [{"method": "agon", "pass_at_1": 61, "mean_length": 3500, "ci_low": 55.2,
              "ci_high": 66.6},
             {"method": "agon_drafter_alone", "pass_at_1": 46, "mean_length": None}]
    rows = [row("grpo", s, 10 + s, 40, 30 + s) for s in (0, 1, 2)]
    rows.append(row("zero_shot", 0, 8, 40, 33))
    figures.pass_vs_length(rows, "unused", "7a", reported=paper, reported_label="paper (X)")
    drawn = texts(captured[0])
    assert "grpo (3 seeds)" in drawn and "zero_shot" in drawn and "agon" in drawn
    assert "agon_drafter_alone" not in drawn          # no published length: cannot be placed
    assert "paper (X)" in drawn and "mean over seeds (bars: seed min-max)" in drawn
    # toy lengths (~30) and the paper's (~3500): two panels, each on its own length axis
    ours, theirs = captured[0].axes
    assert [t.get_text() for t in theirs.texts] == ["agon"] and "agon" not in [t.get_text() for t in ours.texts]
    assert ours.get_xlim()[1] < 100 < 3500 < theirs.get_xlim()[1]
    assert ours.get_ylim() == theirs.get_ylim()  # one pass@1 axis


def test_scatter_labels_do_not_overlap(captured):
    rows = [row(f"method_{i}", 0, 10 + (i % 3), 40, 30 + (i % 2)) for i in range(8)]
    figures.pass_vs_length(rows, "unused", "7a")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = captured[0]
    renderer = FigureCanvasAgg(fig).get_renderer()
    boxes = [t.get_window_extent(renderer) for t in fig.axes[0].texts]
    assert len(boxes) == 8
    clashes = [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a.overlaps(b)]
    assert not clashes


def test_scatter_rejects_duplicate_seeds(tmp_path):
    with pytest.raises(ValueError, match="duplicate seeds"):
        figures.pass_vs_length([row("grpo", 0, 1, 4, 3), row("grpo", 0, 2, 4, 3)],
                               tmp_path / "x", "7a")


def test_paper_points_from_reported_yaml():
    points = figures.paper_points(load_reported(ROOT / "config" / "reported.yaml"))
    by = {p["method"]: p for p in points}
    assert len(points) == 8 and "agon_drafter_alone" not in by   # no published length
    assert by["agon"] == {"method": "agon", "pass_at_1": 61.0, "mean_length": 3500.0,
                          "ci_low": 55.2, "ci_high": 66.6}


def test_figures_are_deterministic(tmp_path):
    rows = [row("grpo", s, 10 + s, 40, 30 + s) for s in (0, 1)] + [row("zero_shot", 0, 8, 40, 33)]
    paper = [{"method": "grpo", "pass_at_1": 30, "mean_length": 8100}]
    points = [{"method": m, "seed": s, "step": t, "k": 5 + t + s, "n": 40}
              for m in ("grpo", "agon") for s in (0, 1) for t in (0, 2, 4)]
    out = []
    for run in ("a", "b"):
        out.append(figures.pass_vs_length(rows, tmp_path / run / "f7a", "7a", reported=paper)
                   + figures.training_curves(points, tmp_path / run / "f7b", "7b"))
    for first, second in zip(*out):
        assert Path(first).read_bytes() == Path(second).read_bytes(), first


def test_training_curves_empty_input(captured):
    figures.training_curves([], "unused", "7b")         # files: test_training_curves_files...
    assert "no checkpoint evaluations in this run" in texts(captured[0])
    figures.pass_vs_length([], "unused", "7a")
    assert "no evaluation rows" in texts(captured[1])


def test_training_curves_multi_seed(tmp_path, captured):
    points = [{"method": m, "seed": s, "step": t, "k": 10 + t, "n": 40}
              for m in ("grpo", "agon") for s in (0, 1) for t in (4, 0, 2)]   # unsorted steps
    figures.training_curves(points, "unused", "7b")
    ax = captured[0].axes[0]
    assert len(ax.lines) == 4                        # one line per (method, seed)
    assert [tuple(line.get_xdata()) for line in ax.lines] == [(0, 2, 4)] * 4
    colours = [line.get_color() for line in ax.lines]
    assert colours[0] == colours[1] != colours[2] == colours[3]   # one colour per method
    assert list(ax.lines[0].get_ydata()) == [25.0, 30.0, 35.0]
    assert "agon (seed 1)" in texts(captured[0])


def test_training_curves_files_and_errors(tmp_path):
    prefix = tmp_path / "f7b"
    check_written(figures.training_curves([], prefix, "7b"), prefix)
    points = [{"method": "grpo", "seed": 0, "step": 2, "k": 3, "n": 8}] * 2
    with pytest.raises(ValueError, match="two evaluations at step 2"):
        figures.training_curves(points, tmp_path / "dup", "7b")
    with pytest.raises(ValueError, match="clopper_pearson"):
        figures.training_curves([{"method": "grpo", "seed": 0, "step": 0, "k": 9, "n": 8}],
                                tmp_path / "bad", "7b")


# --- report ------------------------------------------------------------------

CONFIG = load_config(ROOT / "config" / "test.yaml")  # resolved: test.yaml extends config.yaml
TABLES = {"main": "# Table 3 - main\n\n| method | pass@1 % |\n|---|---|\n| grpo | 35.0 |\n",
          "transfer": "# Table 2 - transfer\n\n| method | gsm8k |\n|---|---|\n| agon | 71.0 |\n"}
FIGURES = {"Figure 7a: pass@1 vs length": "figures/fig7a.png",
           "Figure 7b: training curves": "figures/fig7b.png"}
PROV = [{"file": "results/test/eval/grpo.jsonl", "git_commit": "abc1234def", "config_hash": "f00d",
         "device": "cpu", "packages": {"torch": "2.5.1", "transformers": "4.57.0"}, "seed": 0}]


def report_text(tmp_path, **over):
    args = {"title": "Agon reproduction - test", "config": CONFIG, "tables": TABLES,
            "figures": FIGURES, "provenance": PROV, "notes": ["toy numbers mean nothing"]}
    args.update(over)
    path = tmp_path / "report.md"
    returned = write_report(path, **args)
    text = path.read_text()
    assert text == returned
    return text


def test_report_contents(tmp_path):
    text = report_text(tmp_path)
    assert text.startswith("# Agon reproduction - test\n")
    assert "- **Run:** `test`" in text and "- **Seeds:** 0" in text
    assert "| `grpo` | grpo | group_size=16 |" in text                      # method knobs
    assert "| `zero_shot` | base model (untrained) | single | base |" in text
    # every table, in order, its heading nested under the report's sections
    assert "### Table 3 - main" in text and "| grpo | 35.0 |" in text
    assert text.index("Table 3 - main") < text.index("Table 2 - transfer")
    for caption, path in FIGURES.items():
        assert f"![{caption}]({path})" in text
    assert "| `results/test/eval/grpo.jsonl` | abc1234def | f00d | cpu | 2.5.1 | 4.57.0 | - |" \
        in text                                                              # peft missing -> -
    assert "- toy numbers mean nothing" in text
    fenced = text.split("```yaml\n", 1)[1].split("\n```", 1)[0]
    assert yaml.safe_load(fenced) == CONFIG
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]          # atomic, no leftovers


def test_report_is_pure_and_flags_mixed_commits(tmp_path):
    args = {"title": "t", "config": CONFIG, "tables": TABLES, "figures": FIGURES,
            "provenance": PROV, "notes": []}
    assert render_report(**args) == render_report(**args)
    assert "Warning" not in render_report(**args)
    mixed = PROV + [dict(PROV[0], file="b.jsonl", git_commit="999-dirty")]
    text = render_report(**{**args, "provenance": mixed})
    assert "2 different code versions" in text and "uncommitted" in text
    empty = render_report(title="t", config={}, tables={}, figures={}, provenance=[], notes=[])
    assert "No tables." in empty and "No figures." in empty


# --- the per-model training curves (from metrics.jsonl) -----------------------------------

def _metrics(total, pair, rise=0.0, seed=0):
    """A cell's step records: GRPO's one policy stream every step, or a pair's drafter and challenger
    rotating between A and B (A drafts on even steps); the pass rate climbs by `rise` over the run."""
    steps = []
    for s in range(total):
        wobble = 0.02 * ((s * 7 + seed) % 5 - 2)
        stats = lambda base: {"reward": base + rise * s / total + wobble, "pass_rate": base + rise * s / total + wobble,  # noqa: E731
                              "mean_length": 50.0 - s / 10, "truncated": 2, "rollouts": 64, "truncated_share": 2 / 64,
                              "update_kl": float("nan") if s == 3 else 0.001}
        if pair:
            a, b = ("A", "B") if s % 2 == 0 else ("B", "A")
            streams = {f"drafter:{a}": stats(0.4), f"challenger:{b}": {**stats(0.5), "conversion_rate": 0.3 + wobble}}
        else:
            streams = {"policy:A": stats(0.4)}
        steps.append({"step": s, "lr": 1e-3, "streams": streams})
    return steps


def test_the_training_figure_is_small_multiples_with_each_streams_verdict():
    from matplotlib.text import Text

    from agon.report import preconditions

    cells = {("grpo", 0): _metrics(48, pair=False, rise=0.3), ("agon", 0): _metrics(48, pair=True)}
    fig = figures.training_figure("toy", cells)
    columns = [title for title, key, _ in figures.TRAINING_COLUMNS if key not in figures.OPTIONAL_COLUMNS]
    assert columns == ["reward", "pass rate", "challenger conversion rate", "mean length (tokens)",
                       "truncated (share)", "update KL per token"]   # no stream logs checking reads here
    assert len(fig.axes) == 2 * 6                                   # a row per method, a column per metric
    grid = [fig.axes[i * 6:(i + 1) * 6] for i in range(2)]
    assert [ax.get_title() for ax in grid[0]] == columns and [ax.get_ylabel() for ax in (grid[0][0], grid[1][0])] \
        == ["grpo", "agon"]
    for col in range(6):                                            # axes shared within a column
        assert grid[0][col].get_shared_y_axes().joined(grid[0][col], grid[1][col])
    legend = [t.get_text() for t in grid[1][-1].get_legend().get_texts()]
    assert legend == ["drafter A", "drafter B", "challenger A", "challenger B"]  # role and adapter, each apart
    assert [t.get_text() for t in grid[0][-1].get_legend().get_texts()] == ["policy A"]
    # each stream's verdict is Table 0's own: GRPO's pass rate rises, its text and window bars on its panel
    (rises,) = [v for v in preconditions.stream_verdicts(cells[("grpo", 0)]) if v["metric"] == "pass_rate"]
    assert rises["meets"] == "yes" and rises["target"] == preconditions.RISES
    marks = [t.get_text() for t in grid[0][1].findobj(Text) if t.get_gid() == "verdict"]
    ci = f"[{figures.numbers.fixed(rises['ci'][0], 3, sign=True)}, {figures.numbers.fixed(rises['ci'][1], 3, sign=True)}]"
    assert marks == [f"policy A: {figures.numbers.fixed(rises['difference'], 3, sign=True)} {ci} meets"]
    bars = [line for line in grid[0][1].lines if line.get_gid() == "verdict"]
    assert len(bars) == 3                                           # first and last windows' means, the interval
    assert list(bars[0].get_xdata()) == [0, 11] and list(bars[1].get_xdata()) == [36, 47]
    assert bars[0].get_ydata()[0] == pytest.approx(rises["first"]) and bars[2].get_ydata()[1] == \
        pytest.approx(rises["first"] + rises["ci"][1])
    # every stream of the pair has a verdict line in the reward panel, none in the length panel
    reward = [t.get_text() for t in grid[1][0].findobj(Text) if t.get_gid() == "verdict"]
    assert [m.split(":")[0] for m in reward] == ["drafter A", "drafter B", "challenger A", "challenger B"]
    assert not [t for t in grid[1][3].findobj(Text) if t.get_gid() == "verdict"]
    assert any("no stream has it" == t.get_text() for t in grid[0][2].texts)  # GRPO has no challenger
    caption = " ".join(t.get_text() for t in fig.texts)
    assert f"exponential moving average (weight {figures.smoothing_weight(48)}" in caption


def test_the_checking_reads_column_appears_where_a_stream_logs_it():
    cells = {("self_refine", 0): _metrics(24, pair=True)}
    for record in cells[("self_refine", 0)]:
        for name, stats in record["streams"].items():
            if name.startswith("challenger:"):
                stats["verifying_share"] = 0.1 + record["step"] / 100
    fig = figures.training_figure("toy", cells)
    assert [ax.get_title() for ax in fig.axes][:4] == ["reward", "pass rate", "challenger conversion rate",
                                                       "challenger's checking reads (share)"]
    assert len(fig.axes) == 7

def test_the_training_figure_says_when_a_run_is_too_short_and_overlays_seeds():
    from matplotlib.text import Text

    short = {("grpo", 0): _metrics(6, pair=False), ("grpo", 1): _metrics(6, pair=False, seed=1)}
    fig = figures.training_figure("toy_code", short)
    assert len(fig.axes) == 6
    marks = [t.get_text() for t in fig.axes[0].findobj(Text) if t.get_gid() == "verdict"]
    assert marks == ["policy A: cannot resolve (3+3 values) | cannot resolve (3+3 values)"]
    code = figures.training_figure("toy_code", {("grpo", 0): _metrics(16, pair=False, rise=0.3)})
    marks = [t.get_text() for t in code.axes[1].findobj(Text) if t.get_gid() == "verdict"]
    assert marks == ["policy A: cannot resolve a rise (4+4 values)"]  # 16 steps: reward has a verdict, a rise none
    # two seeds: each seed thin, their mean bold over a band, one legend entry per stream
    assert [t.get_text() for t in fig.axes[-1].get_legend().get_texts()] == ["policy A"]
    assert fig.axes[0].collections and "several seeds" in " ".join(t.get_text() for t in fig.texts)


def test_smoothing_is_tensorboards_debiased_average():
    assert figures.smooth([1.0, 1.0, 1.0], 0.8) == pytest.approx([1.0, 1.0, 1.0])  # no pull towards 0 at the start
    assert figures.smooth([0.0, 1.0], 0.5) == pytest.approx([0.0, 0.5 / 0.75])
    assert figures.smoothing_weight(96) == 0.78 and figures.smoothing_weight(16) == 0.14
    assert figures.smoothing_weight(10_000) == figures.SMOOTHING


def test_the_training_curves_files_come_from_metrics_files(tmp_path):
    import subprocess
    import sys

    from agon import io

    paths = []
    for method, pair in (("grpo", False), ("coop", True)):
        cell = tmp_path / "train" / "toy" / method / "seed0"
        io.write_jsonl(cell / "metrics.jsonl", _metrics(16, pair))
        io.write_json(cell / "adapters" / "train_summary.json", {"steps": 16})
        paths.append(str(cell / "metrics.jsonl"))
    prefix = tmp_path / "figures" / "training_toy"
    run = lambda model: subprocess.run([sys.executable, "-m", "agon.cli", "training-curves", "--model", model,  # noqa: E731
                                        "--metrics", *paths, "--out-prefix", str(prefix)], capture_output=True, text=True)
    done = run("toy")
    assert done.returncode == 0, done.stderr
    check_written((str(prefix) + ".png", str(prefix) + ".pdf"), prefix)
    done = run("toy_code")
    assert done.returncode != 0 and "a cell of model 'toy', not of 'toy_code'" in done.stderr
