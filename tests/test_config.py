import copy
from pathlib import Path

import pytest
import yaml

from agon.config import ConfigError, load, validate

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def base_config():
    return load(ROOT / "config" / "config.yaml")


@pytest.mark.parametrize("name", ["config.yaml", "test.yaml", "paper.yaml", "paper_cpu.yaml", "smollm2.yaml",
                                  "paper_cpu_vllm.yaml", "smollm2_vllm.yaml"])
def test_shipped_configs_validate(name):
    load(ROOT / "config" / name)


def _mutated(config, path, value, delete=False):
    config = copy.deepcopy(config)
    node = config
    for key in path[:-1]:
        node = node[key]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return config


def test_unknown_key_is_named_with_suggestion(base_config):
    bad = _mutated(base_config, ["train", "lerning_rate"], 0.1)
    with pytest.raises(ConfigError, match=r"unknown config key 'train.lerning_rate' \(did you mean 'lr'\?\)|"
                                          r"unknown config key 'train.lerning_rate'"):
        validate(bad)


def test_mistyped_value_is_named(base_config):
    bad = _mutated(base_config, ["train", "lr"], "fast")
    with pytest.raises(ConfigError, match=r"config key 'train.lr': 'fast' is not of type 'number'"):
        validate(bad)


def test_missing_key_is_named(base_config):
    bad = _mutated(base_config, ["datasets", "toy_carries", "heldout"], None, delete=True)
    with pytest.raises(ConfigError, match=r"missing config key\(s\) 'datasets.toy_carries.heldout'"):
        validate(bad)


def test_dangling_reference_is_named(base_config):
    bad = _mutated(base_config, ["tables", "table3_main", "rows"], ["zero_shot", "agon_typo"])
    with pytest.raises(ConfigError, match=r"tables.table3_main.rows: unknown evaluation or pick 'agon_typo'"):
        validate(bad)
    bad = _mutated(base_config, ["evaluations", "grpo", "method"], "nope")
    with pytest.raises(ConfigError, match=r"evaluations.grpo.method: unknown method 'nope'"):
        validate(bad)


def test_pair_method_needs_its_knobs(base_config):
    bad = _mutated(base_config, ["methods", "agon"], {"kind": "pair", "group_size": 8, "mode": "adv"})
    with pytest.raises(ConfigError, match=r"missing config key\(s\) 'methods.agon.exchange', 'methods.agon.roles'"):
        validate(bad)


def test_a_row_named_after_a_method_is_deployed_as_the_method_trained(base_config):
    """The shared rival's challenger never read a draft: its row is one pass, not a cascade."""
    cascades = {"shared_rival_ab": {"method": "shared_rival", "protocol": "cascade", "policies": ["A", "B"]},
                "shared_rival_ba": {"method": "shared_rival", "protocol": "cascade", "policies": ["B", "A"]}}
    bad = _mutated(base_config, ["evaluations"], {**base_config["evaluations"], **cascades})
    bad["picks"]["shared_rival"] = ["shared_rival_ab", "shared_rival_ba"]
    with pytest.raises(ConfigError, match=r"picks.shared_rival: 'shared_rival_ab' is the 'shared_rival' row, so it "
                                          r"must evaluate method 'shared_rival' with protocol 'single'"):
        validate(bad)
    # a pair with exchange is a cascade; an evaluation named after a method is its row too
    bad = _mutated(base_config, ["evaluations", "self_refine", "protocol"], "single")
    bad["evaluations"]["self_refine"]["policies"] = ["A"]
    with pytest.raises(ConfigError, match=r"evaluations.self_refine: .* with protocol 'cascade'"):
        validate(bad)
    bad = _mutated(base_config, ["picks", "agon"], ["agon_ab", "coop_ba"])  # another method's evaluation
    with pytest.raises(ConfigError, match=r"picks.agon: 'coop_ba' is the 'agon' row"):
        validate(bad)


def test_the_mixture_has_two_agents(base_config):
    bad = _mutated(base_config, ["evaluations", "moa", "policies"], [None])
    with pytest.raises(ConfigError, match=r"evaluations.moa.policies: protocol 'moa' needs 2 policies, got 1"):
        validate(bad)


@pytest.mark.parametrize("keys,value,message", [
    (["methods", "agon", "mode"], "adversarial", r"config key 'methods.agon.mode': 'adversarial' is not one of"),
    (["methods", "grpo", "roles"], "rotate", r"unknown config key 'methods.grpo.roles'"),  # grpo reads no roles
    (["methods", "grpo", "kind"], "grop", r"methods.grpo.kind: unknown kind 'grop' \(built in: grpo, pair"),
    (["methods", "grpo", "kind"], "no_such_module_agon:KIND",
     r"methods.grpo.kind: kind 'no_such_module_agon:KIND': cannot import"),
])
def test_a_methods_knobs_are_checked_against_its_kind(base_config, keys, value, message):
    with pytest.raises(ConfigError, match=message):
        validate(_mutated(base_config, keys, value))


def test_missing_and_unparsable_files(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("run: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load(bad)
    bad.write_text(yaml.safe_dump(["a list"]))
    with pytest.raises(ConfigError, match="mapping"):
        load(bad)


def test_extends_merges_mappings_and_replaces_lists(tmp_path):
    from agon.config import merge, resolve_extends

    assert merge({"a": {"x": 1, "y": [1, 2]}, "b": 1}, {"a": {"y": [3]}, "c": 2}) == \
        {"a": {"x": 1, "y": [3]}, "b": 1, "c": 2}
    test = load(ROOT / "config" / "test.yaml")
    default = load(ROOT / "config" / "config.yaml")
    assert test["run"] == "test" and test["methods"] == default["methods"]
    assert test["train"]["lora"]["target_modules"] == default["train"]["lora"]["target_modules"]
    assert test["train"]["lora"]["rank"] == 4
    (tmp_path / "child.yaml").write_text("extends: missing.yaml\nrun: x\n")
    with pytest.raises(ConfigError, match="missing.yaml"):
        load(tmp_path / "child.yaml")


def test_a_mapping_marked_replace_is_taken_whole():
    """paper_cpu_vllm.yaml puts a hub model in place of paper_cpu.yaml's GGUF one: a merge would
    leave the GGUF keys beside the hub ones, which no kind accepts."""
    from agon.config import merge

    parent = {"models": {"m": {"kind": "gguf", "package": "p", "file": "f"}, "n": {"kind": "hub"}}}
    assert merge(parent, {"models": {"m": {"replace": True, "kind": "hub", "path": "x"}}}) == \
        {"models": {"m": {"kind": "hub", "path": "x"}, "n": {"kind": "hub"}}}
    assert merge({}, {"new": {"replace": True, "a": 1}}) == {"new": {"a": 1}}  # the marker never stays
    assert merge(parent, {"models": {"m": {"replace": False, "file": "g"}}})["models"]["m"] == \
        {"kind": "gguf", "package": "p", "file": "g", "replace": False}  # only `true` replaces
    vllm = load(ROOT / "config" / "paper_cpu_vllm.yaml")
    gemma = vllm["models"]["gemma-4-e4b"]
    assert gemma["kind"] == "hub" and "package" not in gemma and "replace" not in gemma
    assert vllm["models"]["qwen3.5-2b"]["generation"] == {"dtype": "bfloat16", "enable_prefix_caching": False}


def test_a_models_generation_overlay_is_for_vllm_and_reaches_its_jobs_only(base_config):
    from agon.resources import job_generation

    config = _mutated(base_config, ["generation"], {"backend": "vllm", "dtype": "float32", "max_model_len": 64})
    model = next(iter(config["models"]))
    config = _mutated(config, ["models", model, "generation"], {"dtype": "bfloat16"})
    assert job_generation(config, "train", model) == {"backend": "vllm", "dtype": "bfloat16", "max_model_len": 64}
    assert job_generation(config, "train") == config["generation"]
    with pytest.raises(ConfigError, match=rf"models.{model}.generation: a model's own vLLM engine arguments, "
                                          r"but generation.backend is 'compact'"):
        validate(_mutated(_mutated(config, ["generation"], {"backend": "compact"}), ["models", model, "generation"],
                          {"dtype": "bfloat16"}))
    with pytest.raises(ConfigError, match=rf"models.{model}.generation.backend: the backend is the top-level"):
        validate(_mutated(config, ["models", model, "generation"], {"backend": "transformers"}))


def test_a_models_generation_overlay_is_checked_against_the_device_at_load_naming_its_line(tmp_path):
    """An overlay that asks vLLM's CPU platform for sleep mode fails when the config loads (where the
    job would fail in vLLM), at the overlay's own line: the check merges it as its jobs do."""
    text = (ROOT / "config" / "paper_cpu_vllm.yaml").read_text().replace(
        "extends: paper_cpu.yaml", f"extends: {ROOT / 'config' / 'paper_cpu.yaml'}")
    overlay = "generation: {dtype: bfloat16, enable_prefix_caching: false}"
    assert overlay in text
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace(overlay, overlay[:-1] + ", sleep_during_loss: true}"))
    line = 1 + text[:text.index(overlay)].count("\n")
    with pytest.raises(ConfigError, match=rf"bad.yaml:{line}: models.qwen3.5-2b.generation \(over generation\): "
                                          r"generation.sleep_during_loss: true, but device: cpu"):
        load(bad)


def test_picks_must_name_evaluations(base_config):
    bad = _mutated(base_config, ["picks", "agon"], ["agon_ab", "agon_cb"])
    with pytest.raises(ConfigError, match=r"picks.agon: unknown evaluation 'agon_cb'"):
        validate(bad)


def test_dataset_references_are_checked(base_config):
    bad = _mutated(base_config, ["benchmarks", "heldout", "dataset"], "toy_mth")
    with pytest.raises(ConfigError, match=r"benchmarks.heldout.dataset: unknown dataset 'toy_mth'"):
        validate(bad)
    bad = _mutated(base_config, ["benchmarks", "validation", "dataset"], "toy_carries_transfer")
    with pytest.raises(ConfigError, match=r"benchmarks.validation: dataset 'toy_carries_transfer' has validation: 0"):
        validate(bad)
    bad = _mutated(base_config, ["models", "toy", "train_data"], "toy_carries_transfer")
    with pytest.raises(ConfigError, match=r"models.toy.train_data: dataset 'toy_carries_transfer' has train: 0"):
        validate(bad)


def test_table_kinds_benchmarks_and_absent_models(base_config):
    # a table may list a model this run does not configure (rendered "absent at this scale")
    ok = _mutated(base_config, ["tables", "table5_scaling", "models"], ["toy", "qwen3-4b", "some_code_model"])
    validate(ok)
    # ... and then needs no configured benchmark when none of its models is configured
    validate(_mutated(ok, ["tables", "table5_scaling"], {**ok["tables"]["table5_scaling"],
                                                         "models": ["qwen3-4b"], "benchmark": "codecontests"}))
    bad = _mutated(base_config, ["tables", "table2_transfer", "benchmarks"], ["transfer_easy", "transfr"])
    with pytest.raises(ConfigError, match=r"tables.table2_transfer: unknown benchmark 'transfr'"):
        validate(bad)
    both = _mutated(base_config, ["tables", "table3_main", "benchmarks"], ["heldout"])
    with pytest.raises(ConfigError, match=r"tables.table3_main: give exactly one of 'benchmark'"):
        validate(both)
    design = _mutated(base_config, ["tables", "table1_design", "rows"], ["agon"])
    with pytest.raises(ConfigError, match=r"tables.table1_design: a design table .* drop rows"):
        validate(design)
    no_rows = _mutated(base_config, ["tables", "table3_main", "rows"], None, delete=True)
    with pytest.raises(ConfigError, match=r"missing config key\(s\) 'tables.table3_main.rows'"):
        validate(no_rows)
    bad = _mutated(base_config, ["tables", "table2_transfer", "paper", "benchmark"], {"heldout": "gsm8k"})
    with pytest.raises(ConfigError, match=r"paper.benchmark: 'heldout' is not one of the table's benchmarks"):
        validate(bad)


def test_figure_7b_references(base_config):
    bad = _mutated(base_config, ["figures", "fig7b", "rows"], ["grpo", "zero_shot", "agon_typo"])
    with pytest.raises(ConfigError, match=r"'zero_shot' must evaluate one trained method") as e:
        validate(bad)
    assert "unknown evaluation or pick 'agon_typo'" in str(e.value)
    bad = _mutated(base_config, ["figures", "fig7b", "step0"], "grpo")
    with pytest.raises(ConfigError, match=r"figures.fig7b.step0: 'grpo' is not an untrained single-pass"):
        validate(bad)
    bad = _mutated(base_config, ["train", "snapshot_every"], None)
    with pytest.raises(ConfigError, match=r"figures.fig7b: needs train.snapshot_every"):
        validate(bad)
    bad = _mutated(base_config, ["figures", "fig7a", "table"], "table1_design")
    with pytest.raises(ConfigError, match=r"figures.fig7a.table: 'table1_design' is not a results table"):
        validate(bad)


# --- errors that name the file and the line ------------------------------------------------

def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_each_problem_is_one_line_naming_its_file_and_line(tmp_path):
    path = _write(tmp_path, "over.yaml", f"extends: {ROOT / 'config' / 'test.yaml'}\n"
                  "train:\n  lr: 0.1\n  lerning_rate: 3\nmodels:\n  toy: {train_data: nope}\n")
    with pytest.raises(ConfigError) as e:
        load(path)
    lines = str(e.value).splitlines()
    assert lines[0] == (f"invalid config ({path}, {ROOT / 'config' / 'test.yaml'}, {ROOT / 'config' / 'search.yaml'}, "
                        f"{ROOT / 'config' / 'config.yaml'}):")
    assert lines[1].startswith(f"  {path}:4: unknown config key 'train.lerning_rate'") and len(lines) == 2
    # a reference problem (checked after the schema passes), named where the key was written
    path.write_text(f"extends: {ROOT / 'config' / 'test.yaml'}\nmodels:\n  toy: {{train_data: nope}}\n")
    with pytest.raises(ConfigError, match=rf"\n  {path}:3: models.toy.train_data: unknown dataset 'nope'"):
        load(path)
    # a key the extending files do not hold is named in the file that does, two levels up
    with pytest.raises(ConfigError) as e:
        validate(_mutated(load(ROOT / "config" / "test.yaml"), ["train", "lr"], "fast"),
                 [ROOT / "config" / "test.yaml", ROOT / "config" / "search.yaml", ROOT / "config" / "config.yaml"])
    text = (ROOT / "config" / "config.yaml").read_text().splitlines()
    train = text.index("train:")
    line = next(i for i, t in enumerate(text[train:], train + 1) if t.startswith("  lr:"))
    assert f"{ROOT / 'config' / 'config.yaml'}:{line}: config key 'train.lr'" in str(e.value)


def test_a_split_larger_than_a_generated_pool_fails_at_load(tmp_path):
    path = _write(tmp_path, "big.yaml", f"extends: {ROOT / 'config' / 'test.yaml'}\n"
                  "datasets:\n  toy_math: {heldout: 400}\n")
    with pytest.raises(ConfigError, match=rf"{path}:3: datasets.toy_math: options.pool_size 300 cannot hold "
                                          r"heldout 400 \+ validation 16 \+ train 8 \(needs 424\)"):
        load(path)


def test_an_extends_cycle_is_named_as_a_cycle(tmp_path):
    a = _write(tmp_path, "a.yaml", "extends: b.yaml\nrun: a\n")
    b = _write(tmp_path, "b.yaml", "extends: a.yaml\n")
    with pytest.raises(ConfigError, match=rf"`extends:` cycle: {a} -> {b} -> {a}$"):
        load(a)
    self_loop = _write(tmp_path, "c.yaml", "extends: c.yaml\n")
    with pytest.raises(ConfigError, match="cycle"):
        load(self_loop)


def test_a_yaml_syntax_error_names_file_line_and_column(tmp_path):
    bad = _write(tmp_path, "syntax.yaml", "run: x\ndatasets:\n  a: [1\n  b: 2\n")
    with pytest.raises(ConfigError, match=rf"^{bad}:4:4: not valid YAML: "):
        load(bad)
    parent = _write(tmp_path, "child.yaml", "extends: syntax.yaml\n")
    with pytest.raises(ConfigError, match=rf"^{bad}:4:4: not valid YAML"):
        load(parent)


def test_the_config_checker_command_names_every_bad_file(tmp_path, capsys):
    from agon.config import main

    bad = _write(tmp_path, "syntax.yaml", "run: [x\n")
    assert main([str(ROOT / "config" / "test.yaml")]) == 0
    assert main([str(bad), str(ROOT / "config" / "test.yaml")]) == 1
    assert f"{bad}:2:1: not valid YAML" in capsys.readouterr().err
