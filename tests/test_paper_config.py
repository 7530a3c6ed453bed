"""config/paper.yaml: the paper's whole matrix plans (dry run) and lints clean.

Nothing here runs a job: `snakemake -n` builds the DAG of every table and figure
(no hub, no GPU needed), `snakemake --lint` checks the rules under this config.
About 20 s.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from agon.config import load as load_config
from agon.model_sources import locate
from pipeline import job_blocks

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "config" / "paper.yaml"
ALARMING = re.compile(r"warn|error|exception|missing input|ambiguous|deprecat", re.I)


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(workdir),
           "--configfile", str(PAPER), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def config():
    return load_config(PAPER)


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    proc = snakemake(tmp_path_factory.mktemp("paper"), "-n", "-p")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return proc.stdout + proc.stderr


def test_paper_settings(config):
    import yaml

    assert "extends" not in yaml.safe_load(PAPER.read_text()) and config["run"] == "paper"
    t, s = config["train"], config["sampling"]
    assert (t["lr"], t["warmup_ratio"], t["epochs"], t["lam"], t["beta"], t["lora"]["rank"]) == (5e-5, 0.1, 1, 0.5, 0, 16)
    for stage in ("train", "eval"):
        assert (s[stage]["temperature"], s[stage]["top_p"]) == (0.6, 0.95)
        assert s[stage]["max_new_tokens"] == 16384  # the paper's value is not in our copy; see the cap test below
    methods = config["methods"]
    assert methods["grpo"]["group_size"] == 16
    assert all(m["group_size"] == 8 for k, m in methods.items() if m["kind"] == "pair")
    assert methods["length_tiebreak"]["gamma"] == 0.5 and not any(m.get("gamma") for k, m in methods.items()
                                                                   if k != "length_tiebreak")
    deepmath = config["datasets"]["deepmath_hard"]
    assert deepmath["heldout"] == 300 and deepmath["options"] == {"difficulty": 8, "difficulty_match": "eq",
                                                                  "keep_binary": False}
    assert len(config["seeds"]) == 3
    assert config["generation"]["backend"] == "vllm"
    assert {k: m["path"] for k, m in config["models"].items()} == {
        "qwen3-0.6b": "Qwen/Qwen3-0.6B", "qwen3-1.7b": "Qwen/Qwen3-1.7B", "qwen3-4b": "Qwen/Qwen3-4B",
        "qwen3.5-2b": "Qwen/Qwen3.5-2B", "gemma-4-e4b": "google/gemma-4-E4B-it",
        "qwen3-1.7b-code": "Qwen/Qwen3-1.7B"}
    for key, model in config["models"].items():
        assert locate(key, model) == {"where": "hub", "repo": model["path"], "revision": None, "cache_dir": None}


def test_table_names_and_rows_mirror_the_embedded_default(config):
    default = load_config(ROOT / "config" / "config.yaml")
    for name, table in default["tables"].items():
        assert name in config["tables"], f"{name} is in config.yaml but not in paper.yaml"
        for key in ("rows", "kind", "contrasts", "pairs"):
            assert table.get(key) == config["tables"][name].get(key), (name, key)
        # the same claims, whatever benchmarks stand for the paper's at each scale
        sides = lambda t: {(c["a"], c.get("b"), c.get("measure", "pass"), c["expect"])  # noqa: E731
                           for c in t.get("claims", [])}
        assert sides(table) == sides(config["tables"][name]), (name, "claims")
    assert "table6_code" in config["tables"]
    assert set((default.get("figures") or {})) <= set(config["figures"])


def test_dry_run_plans_every_job_quietly(config, dry_run):
    jobs = job_blocks(dry_run)
    counts: dict[str, int] = {}
    for rule, _ in jobs:
        counts[rule] = counts.get(rule, 0) + 1
    seeds = len(config["seeds"])
    # every (model, trained method) cell of every table and Figure 7b, per seed
    assert counts["train"] == seeds * (9 + 4 * 2 + 3)
    # scripts/resource_arithmetic.py counts the same cells for its GPU-hour total as the workflow trains
    import importlib.util

    spec = importlib.util.spec_from_file_location("resource_arithmetic", ROOT / "scripts" / "resource_arithmetic.py")
    arithmetic = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(arithmetic)
    assert seeds * sum(map(len, arithmetic.training_cells(config).values())) == counts["train"]
    assert counts["evaluate"] == seeds * (10 + 4 * 3 + 4)
    assert counts["fetch_model"] == len(config["models"])
    assert counts["prepare"] == len(config["datasets"])
    assert counts["table"] == len(config["tables"])
    assert counts["curve"] == seeds * len(config["figures"]["fig7b"]["rows"])
    assert counts.get("base", 0) == 0  # no toy model at paper scale
    outputs = " ".join(f.get("output", "") for _, f in jobs)
    for table in config["tables"]:
        assert f"results/paper/tables/{table}.csv" in outputs
    for figure in ("fig7a.png", "fig7b.png"):
        assert f"results/paper/figures/{figure}" in outputs
    assert "results/paper/report.md" in outputs
    # the config's per-rule resources reach the jobs (and so the Slurm profile)
    res = config["resources"]
    for rule, fields in jobs:
        if rule in res:
            for key, value in res[rule].items():
                if key != "min_gpu_gib":  # per model (the test below)
                    assert f"{key}={value}" in fields["resources"], (rule, key, fields["resources"])
    for line in dry_run.splitlines():
        if not re.match(r"^\s+(input|output|log|reason|wildcards|resources):|Shell command: ", line):
            assert not ALARMING.search(line), line


def test_lint_is_clean(tmp_path):
    proc = snakemake(tmp_path, "--lint")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert "Lints for" not in out and "Congratulations, your workflow is in a good condition!" in out, out[-6000:]


def test_the_resource_arithmetic_beside_paper_yaml_is_the_scripts():
    """paper.yaml's resource comments are scripts/resource_arithmetic.py's output, and its
    parameter counts are the published sizes (0.6B, 1.7B, 4B)."""
    out = subprocess.run([sys.executable, "scripts/resource_arithmetic.py"], capture_output=True, text=True,
                         check=True).stdout
    rows = {line[:28].strip(): line[28:].split() for line in out.splitlines() if line[:28].strip()}
    assert [round(float(x), 1) for x in rows["parameters (B)"]] == [0.6, 1.7, 4.0]
    paper = Path("config/paper.yaml").read_text().splitlines()
    for label, comment in (("weights bf16 (GiB), each", "weights bf16 (GiB, each)"),
                           ("activations (GiB)", "activations (GiB)"),
                           ("as share of the GPU", "trainer peak, share of GPU")):
        line = next(ln for ln in paper if comment in ln)
        assert re.findall(r"\d+\.\d+", line)[:3] == rows[label], (label, line)
    for label, comment in (("smallest GPU at 0.6 (GiB)", "smallest GPU at 0.6 (GiB)"),
                           ("vLLM KV room, train (k tok)", "vLLM KV room, train (k tok)"),
                           ("vLLM KV room, eval (k tok)", "vLLM KV room, eval (k tok)"),
                           ("hours of generation, cap", "hours of generation per run")):
        line = next(ln for ln in paper if comment in ln)
        assert line.split(comment, 1)[1].split()[:3] == rows[label], (label, line)
    need = {m: int(float(x)) for m, x in zip(("qwen3-0.6b", "qwen3-1.7b", "qwen3-4b"), rows["smallest GPU at 0.6 (GiB)"])}
    config = load_config(PAPER)
    for model, entry in config["models"].items():  # each model asks for a GPU that holds its trainer
        if entry["paper_model"] not in need:  # (the code run's Qwen3-1.7B too)
            continue
        gib = need[entry["paper_model"]]
        asked = entry.get("resources", {}).get("train", {}).get(
            "min_gpu_gib", config["resources"]["train"]["min_gpu_gib"])
        assert gib <= asked, (model, gib, asked)


def job_specs(log: str, command: str) -> list[dict]:
    """The --spec of every `agon <command>` job the dry run prints (-p)."""
    import json

    return [json.loads(m) for m in re.findall(rf"agon {command} --spec '(.*?)'", log)]


def test_the_dry_run_plans_each_row_with_the_papers_protocol(dry_run):
    """Single pass for the shared and hidden rival (no draft to read), the two-agent MoA, and
    every pair with exchange, fixed roles included, as a cascade in both directions."""
    planned = {}
    for spec in job_specs(dry_run, "evaluate"):
        if spec["model"] == "qwen3-0.6b" and spec["seed"] == 0:
            planned.update(spec["evaluations"])
    for rival in ("shared_rival", "hidden_rival"):
        assert {k: v for k, v in planned.items() if k.startswith(rival)} == {
            f"{rival}_a": {"method": rival, "protocol": "single", "policies": ["A"]},
            f"{rival}_b": {"method": rival, "protocol": "single", "policies": ["B"]}}
    assert planned["moa"] == {"method": None, "protocol": "moa", "policies": [None, None]}
    for pair in ("coop", "agon", "margin", "fixed_roles", "length_tiebreak"):
        assert planned[f"{pair}_ab"]["policies"] == ["A", "B"] and planned[f"{pair}_ba"]["policies"] == ["B", "A"]
        assert planned[f"{pair}_ab"]["protocol"] == planned[f"{pair}_ba"]["protocol"] == "cascade"


def test_jobs_get_their_gpu_share_and_the_gpu_memory_their_model_needs(config, dry_run):
    """An evaluation's engine has its GPU alone; a train job's shares it with the trainer. A model's
    own min_gpu_gib reaches its train jobs' Slurm resources and their specs."""
    share = {c: {s["generation"]["gpu_memory_utilization"] for s in job_specs(dry_run, c)} for c in ("train", "evaluate")}
    assert share == {"train": {0.35}, "evaluate": {0.9}}
    assert all("eval_gpu_memory_utilization" not in s["generation"] for c in ("train", "evaluate")
               for s in job_specs(dry_run, c))
    need = {s["base_path"].split("/")[-2]: s["min_gpu_gib"] for s in job_specs(dry_run, "train")}
    assert need == {"qwen3-0.6b": 40, "qwen3-1.7b": 48, "qwen3-4b": 80, "qwen3.5-2b": 80, "gemma-4-e4b": 80,
                    "qwen3-1.7b-code": 48}
    for rule, fields in job_blocks(dry_run):
        if rule == "train":
            model = re.search(r"results/paper/train/([^/]+)/", fields["output"]).group(1)
            assert f"min_gpu_gib={need[model]}" in fields["resources"], (model, fields["resources"])


def test_the_completion_cap_can_produce_the_papers_mean_lengths(config):
    """Every mean length the paper reports is at most half the cap (a mean near the cap would mean
    nearly every completion was cut off, with no answer), and the context holds a challenger's row."""
    import yaml

    reported = yaml.safe_load((ROOT / "config" / "reported.yaml").read_text())
    lengths = [cell["mean_length"] for table in reported["tables"].values()
               for benches in table["results"].values() for rows in benches.values()
               for cell in rows.values() if cell.get("mean_length")]
    assert max(lengths) == 8100
    for stage in ("train", "eval"):
        cap = config["sampling"][stage]["max_new_tokens"]
        assert cap >= 2 * max(lengths), (stage, cap)
    cap = config["sampling"]["train"]["max_new_tokens"]
    # the longest row: a ~1k-token question, a rival summary of up to one cap, the completion
    assert config["generation"]["max_model_len"] >= 1024 + 2 * cap


# Keys whose value we do not have from the paper (PAPER.md: it does not state it, or our copy of
# the paper lacks it): their comment may not be labelled `paper`.
UNSTATED = {
    "seeds", "threads", "precision", "device",
    "generation.dtype", "generation.gpu_memory_utilization", "generation.eval_gpu_memory_utilization",
    "generation.sleep_during_loss", "generation.max_model_len", "generation.enable_prefix_caching",
    "datasets.deepmath_hard.seed", "datasets.deepmath_hard.validation", "datasets.deepmath_hard.train",
    "datasets.deepmath_hard.options.difficulty_match", "datasets.gsm8k.seed", "datasets.gsm8k.heldout",
    "datasets.math500.seed", "datasets.codecontests_easy.seed", "datasets.codecontests_easy.heldout",
    "datasets.codecontests_easy.validation", "datasets.codecontests_easy.train",
    "datasets.codecontests_easy.options.split", "datasets.codecontests_easy.options.difficulties",
    "datasets.codecontests_easy.options.drop_file_io",
    "train.problems_per_step", "train.weight_decay", "train.max_grad_norm", "train.loss_type",
    "train.clip_low", "train.clip_high", "train.beta", "train.adapter_a_init_sigma", "train.checkpoint_every",
    "train.snapshot_every", "train.loss_micro_batch_tokens", "train.gradient_checkpointing",
    "train.gpu_memory_fraction", "train.lora.alpha", "train.lora.target_modules",
    "sampling.train.temperature", "sampling.train.top_p", "sampling.train.max_new_tokens",
    "sampling.eval.temperature", "sampling.eval.top_p", "sampling.eval.max_new_tokens", "methods.hidden_rival",
}
# Keys the paper states but whose value our copy of it lacks (PAPER.md, Setup): labelled so.
NOT_IN_OUR_COPY = {"sampling.train.max_new_tokens", "sampling.eval.temperature", "sampling.eval.top_p",
                   "sampling.eval.max_new_tokens"}
# Sections whose every setting carries a label.
LABELLED = ("seeds", "threads", "precision", "device", "generation.", "datasets.", "train.", "sampling.", "methods.")
MISSING = "stated in the paper, value not in our copy"
LABEL = re.compile(rf"^(paper|ours|unspecified|{MISSING})\b(?:\s*\(([^)]*)\))?\s*:")
WHERE = re.compile(r"^(Method|Setup|Table [1-8]|Eq\. [1-3]|Algorithm 1|Sec\. 5\.[56]|Figure 7[ab])(, .+)?$")


def settings_with_comments(text: str) -> list[tuple[str, str, int]]:
    """(dotted key, its label comment, line number) for every leaf setting of a block-style YAML
    file: the comment on its line, else the comment block right above it."""
    out, stack, above = [], [], []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("#"):
            above.append(stripped.lstrip("#").strip())
            continue
        m = re.match(r"^(\s*)([\w.-]+):\s*(.*)$", line)
        if not m:
            above = []
            continue
        indent, key, rest = len(m.group(1)), m.group(2), m.group(3)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([k for _, k in stack] + [key])
        value, _, comment = rest.partition(" #")
        if value.strip().startswith("#"):
            value, comment = "", value.strip()[1:]
        if value.strip():
            labelled = [c for c in [comment.strip(), *reversed(above)] if LABEL.match(c)]
            out.append((path, labelled[0] if labelled else "", number))
        else:
            stack.append((indent, key))
        above = []
    return out


def test_every_paper_label_is_a_setting_the_paper_states_with_its_section():
    settings = settings_with_comments(PAPER.read_text())
    paths = {p for p, _, _ in settings}
    assert "train.beta" in paths and "sampling.eval.top_p" in paths and "datasets.deepmath_hard.train" in paths
    assert UNSTATED <= paths, f"listed but not in paper.yaml: {sorted(UNSTATED - paths)}"
    problems = []
    for path, comment, number in settings:
        if not (path in LABELLED[:4] or path.startswith(LABELLED[4:])):
            continue
        m = LABEL.match(comment)
        if not m:
            problems.append(f"line {number} {path}: no `paper (where):`, `unspecified:`, `ours:` or "
                            f"`{MISSING} (where):` label")
        elif (m.group(1) == MISSING) != (path in NOT_IN_OUR_COPY):
            problems.append(f"line {number} {path}: `{MISSING}` is the label of exactly {sorted(NOT_IN_OUR_COPY)}")
        elif m.group(1) == MISSING and not WHERE.match(m.group(2) or ""):
            problems.append(f"line {number} {path}: `{MISSING}` needs where the paper says it, e.g. (Setup)")
        elif m.group(1) == "paper" and path in UNSTATED:
            problems.append(f"line {number} {path}: labelled paper, but the paper does not state it")
        elif m.group(1) == "paper" and not WHERE.match(m.group(2) or ""):
            problems.append(f"line {number} {path}: `paper` needs where the paper says it, e.g. (Setup)")
    assert not problems, "\n".join(problems)
    # no bare `paper:` claim anywhere in a comment: each names its section
    bare = [n for n, line in enumerate(PAPER.read_text().splitlines(), 1)
            if "#" in line and re.search(r"\bpaper:", line.split("#", 1)[1], re.I)]
    assert not bare, f"lines {bare}: a bare `paper:` label"


def test_the_label_check_catches_a_paper_label_on_an_unstated_key():
    text = "train:\n  beta: 0.0   # paper (Setup): KL omitted\n  lr: 0.1  # paper (Setup): 5e-5\n"
    (beta, b_comment, _), (lr, lr_comment, _) = settings_with_comments(text)
    assert (beta, lr) == ("train.beta", "train.lr") and beta in UNSTATED and LABEL.match(b_comment).group(1) == "paper"
    block = "train:\n  # unspecified: why\n  # more\n  beta: 0.0\n"
    assert settings_with_comments(block) == [("train.beta", "unspecified: why", 4)]
    missing = "sampling:\n  eval:\n    top_p: 0.95   # stated in the paper, value not in our copy (Setup): why\n"
    [(path, comment, _)] = settings_with_comments(missing)
    m = LABEL.match(comment)
    assert path in NOT_IN_OUR_COPY and (m.group(1), m.group(2)) == (MISSING, "Setup")


def test_qwen35_lora_covers_every_linear_layer_of_its_language_model_and_no_vision_tower(config, tmp_path):
    """A tiny Qwen3.5 hybrid (3 Gated-DeltaNet layers, 1 full-attention layer, a vision tower),
    saved as the hub's ForConditionalGeneration, loaded and wrapped by the project's own code
    with paper.yaml's targets for qwen3.5-2b: every Linear of the language model but the head
    carries both adapters; the seven Qwen3 names alone would miss all linear-attention ones."""
    import torch
    from tiny_families import qwen35

    from agon.config import merge
    from agon.models import LoraPolicies, load_base

    qwen35(tmp_path)  # the hub's class, with the toy tokenizer (load_base reads one)

    def wrapped(lora: dict) -> tuple[set[str], set[str]]:
        base, _ = load_base(str(tmp_path))  # what every job loads: AutoModelForCausalLM
        linears = {n for n, m in base.named_modules() if isinstance(m, torch.nn.Linear) and n != "lm_head"}
        policies = LoraPolicies(base, ("A", "B"), lora, {"A": 0.001}, seed=0)
        got = {n.removeprefix("base_model.model.").removesuffix(".lora_A.A")
               for n, _ in policies.model.named_modules() if n.endswith(".lora_A.A")}
        return linears, got

    lora = merge(config["train"], config["models"]["qwen3.5-2b"].get("train", {}))["lora"]
    linears, got = wrapped(lora)
    assert any(".linear_attn.in_proj_qkv" in n for n in linears) and not any("visual" in n for n in linears)
    assert got == linears and len(got) == 31
    _, qwen3_names_only = wrapped(config["train"]["lora"])
    assert not any(".linear_attn." in n for n in qwen3_names_only)
