"""Pinned toy bases (agon.toy.pinned): a snapshot is installed only where it fits the config."""

import json
from pathlib import Path

import pytest

from agon import io
from agon.data.splits import split_hash
from agon.toy import pinned

RECIPE = {"seed": 0, "steps": 600, "lr": 0.003, "arch": {"hidden_size": 128}, "attn_implementation": "eager"}
SPEC = {**RECIPE, "model": "toy", "source": "pinned", "pinned_path": "models/toy", "precision": "auto"}


def _split(tmp_path, dataset, split, problems):
    path = tmp_path / "data" / dataset / f"{split}.jsonl"
    io.write_jsonl(path, problems)
    return str(path)


@pytest.fixture
def world(tmp_path):
    """A trained base as the `base` rule writes it, its two unseen splits, and its pinned snapshot."""
    heldout = _split(tmp_path, "toy_math", "heldout", [{"id": "a", "prompt": "1+1"}])
    validation = _split(tmp_path, "toy_math", "validation", [{"id": "b", "prompt": "2+2"}])
    base = tmp_path / "trained"
    base.mkdir()
    (base / "model.safetensors").write_bytes(b"weights")
    (base / "config.json").write_text("{}")
    io.write_json(base / pinned.BASE_RECORD, {
        "source": "train", "sha256": pinned.weights_sha256(base), "recipe": pinned.recipe(SPEC),
        "unseen_splits": pinned.split_hashes([heldout, validation]),
        "trained": {"cpu": "test CPU", "precision": "bf16", "commit": "abc", "seconds": 1.0}, "history": []})
    snapshot = tmp_path / "models" / "toy"
    pinned.pin(base, snapshot)
    return {"base": base, "snapshot": snapshot, "unseen": [heldout, validation], "tmp": tmp_path}


def _install(world, spec=SPEC, unseen=None):
    out = world["tmp"] / "results" / "models" / "toy" / "base"
    return out, pinned.install(world["snapshot"], out, spec, world["unseen"] if unseen is None else unseen,
                               log=lambda m: None)


def test_pin_then_install_gives_the_trained_files(world):
    manifest = io.read_json(world["snapshot"] / pinned.MANIFEST)
    assert sorted(manifest["files"]) == ["config.json", "model.safetensors"]  # the record is not a file of it
    assert manifest["unseen_splits"] == {"toy_math/heldout": split_hash([{"id": "a", "prompt": "1+1"}]),
                                         "toy_math/validation": split_hash([{"id": "b", "prompt": "2+2"}])}
    out, record = _install(world)
    assert (out / "model.safetensors").read_bytes() == b"weights"
    assert record["source"] == "pinned" and record["sha256"] == pinned.sha256(out / "model.safetensors")
    assert record["trained"]["cpu"] == "test CPU" and record["precision"] == "bf16"
    assert pinned.identity(out) == {"source": "pinned", "pinned_path": "models/toy", "sha256": record["sha256"]}


def test_precision_and_source_keys_are_not_part_of_the_recipe(world):
    _install(world, {**SPEC, "precision": "fp32"})  # the manifest records what it was trained in


@pytest.mark.parametrize("key,value", [("steps", 800), ("lr", 0.001), ("arch", {"hidden_size": 64}),
                                       ("attn_implementation", "sdpa"), ("bisect_prob", 0.2)])
def test_a_changed_recipe_is_refused_naming_the_key(world, key, value):
    with pytest.raises(pinned.PinnedBaseError) as e:
        _install(world, {**SPEC, key: value})
    where = "models.toy.attn_implementation" if key == "attn_implementation" else f"models.toy.base.{key}"
    assert where in str(e.value) and "models.toy.base.source: train" in str(e.value)
    assert not (world["tmp"] / "results").exists()  # nothing written


def test_a_changed_split_is_refused_naming_it(world):
    """A new split seed draws other held-out problems: the base may have trained on them."""
    redrawn = _split(world["tmp"] / "new", "toy_math", "heldout", [{"id": "c", "prompt": "3+3"}])
    with pytest.raises(pinned.PinnedBaseError) as e:
        _install(world, unseen=[redrawn, world["unseen"][1]])
    assert "split toy_math/heldout (datasets.toy_math)" in str(e.value) and "content hash" in str(e.value)
    assert "models.toy.base.source: train" in str(e.value)


def test_a_split_the_base_was_never_kept_away_from_is_refused(world):
    extra = _split(world["tmp"], "more_math", "heldout", [{"id": "d", "prompt": "4+4"}])
    with pytest.raises(pinned.PinnedBaseError, match="split more_math/heldout .* never kept away"):
        _install(world, unseen=world["unseen"] + [extra])


def test_fewer_splits_than_the_base_was_kept_away_from_is_fine(world):
    _install(world, unseen=world["unseen"][:1])


def test_a_changed_or_missing_file_is_refused(world):
    (world["snapshot"] / "config.json").write_text('{"edited": true}')
    with pytest.raises(pinned.PinnedBaseError, match="config.json: sha256 .* differs"):
        _install(world)
    (world["snapshot"] / "config.json").unlink()
    with pytest.raises(pinned.PinnedBaseError, match="config.json: listed in agon_pinned.json but missing"):
        _install(world)


def test_a_manifest_naming_a_path_outside_the_snapshot_is_refused(world):
    path = world["snapshot"] / pinned.MANIFEST
    manifest = io.read_json(path)
    manifest["files"]["../../secret"] = "0" * 64
    io.write_json(path, manifest)
    with pytest.raises(pinned.PinnedBaseError, match="not a plain file of the snapshot"):
        _install(world)


def test_no_manifest_or_a_damaged_one_is_refused(world):
    path = world["snapshot"] / pinned.MANIFEST
    path.write_text("{not json")
    with pytest.raises(pinned.PinnedBaseError, match="not a pinned base's manifest"):
        _install(world)
    path.unlink()
    with pytest.raises(pinned.PinnedBaseError, match="no pinned base there"):
        _install(world)


def test_only_a_trained_base_is_pinned(world, tmp_path):
    out, _ = _install(world)
    with pytest.raises(pinned.PinnedBaseError, match="source 'pinned'"):
        pinned.pin(out, tmp_path / "again")


@pytest.mark.parametrize("config_name, model", [("config.yaml", "toy"), ("config.yaml", "toy_code"),
                                               ("search.yaml", "toy"), ("carries.yaml", "toy")])
def test_the_repositorys_pinned_bases_fit_their_configs(config_name, model):
    """Each config's recipes are the ones its pinned bases were trained with (a changed recipe
    must come with a new pin), and every file of the snapshot is the one its manifest names."""
    from agon.config import load

    root = Path(__file__).resolve().parents[1]
    config = load(root / "config" / config_name)
    m = config["models"][model]
    assert m["base"]["source"] == "pinned"
    snapshot = root / m["base"]["pinned_path"]
    manifest = json.loads((snapshot / pinned.MANIFEST).read_text())
    spec = {**m["base"], "model": model, "precision": config["precision"],
            "attn_implementation": m.get("attn_implementation")}
    assert pinned.problems(manifest, spec, {}, model) == []
    for name, digest in manifest["files"].items():
        assert pinned.sha256(snapshot / name) == digest, name


# --- the real pipeline: the default config's base jobs ---------------------------------------

from test_workflow import ROOT, snakemake  # noqa: E402


@pytest.mark.workflow
def test_the_default_runs_base_jobs_install_the_pinned_bases(tmp_path):
    """config.yaml's `base` jobs check and copy models/<m> (seconds), training nothing."""
    snakemake(tmp_path, "results/toy/models/toy/base", "results/toy/models/toy_code/base",
              "--configfile", str(ROOT / "config" / "config.yaml"))
    for model, snapshot in (("toy", "toy_facts"), ("toy_code", "toy_code")):
        base = tmp_path / "results" / "toy" / "models" / model / "base"
        manifest = json.loads((ROOT / "models" / snapshot / pinned.MANIFEST).read_text())
        record = json.loads((base / pinned.BASE_RECORD).read_text())
        assert record["source"] == "pinned" and record["pinned_path"] == f"models/{snapshot}"
        assert record["sha256"] == manifest["files"]["model.safetensors"] == pinned.weights_sha256(base)
        assert "base step" not in (tmp_path / "results" / "toy" / "logs" / "base" / f"{model}.log").read_text()


@pytest.mark.workflow
def test_a_changed_split_seed_or_recipe_stops_the_base_job_before_anything_is_installed(tmp_path):
    changed = tmp_path / "changed.yaml"
    changed.write_text("extends: config.yaml\nrun: changed\ndatasets: {toy_carries: {seed: 1}}\n"
                       "models: {toy: {base: {steps: 1801}}}\n")
    proc = snakemake(tmp_path, "results/changed/models/toy/base", "--configfile", str(changed), check=False)
    assert proc.returncode != 0
    log = (tmp_path / "results" / "changed" / "logs" / "base" / "toy.log").read_text()
    assert "split toy_carries/heldout (datasets.toy_carries): its content hash is" in log, log
    assert "models.toy.base.steps: the pinned base was trained with 1800, this config has 1801" in log, log
    assert "set models.toy.base.source: train" in log, log
    assert not (tmp_path / "results" / "changed" / "models" / "toy" / "base").exists()
