"""The workflow on a real Slurm cluster, through profiles/slurm.

The `slurm` tests start a single-node Slurm cluster on this machine with
scripts/slurm/start-local-slurm.sh (possible as root on Debian, with apt), run
config/test.yaml through the Slurm profile (with the test overrides that
profiles/slurm/README.md lists), check that the cluster rules went through
sbatch and that the results equal a local run's (`--cores 2`, same config; the
pipeline is deterministic on one machine). Both runs sit under `timeout -s KILL`
(a hung snakemake ignores SIGTERM). The daemons are always stopped by their
recorded PIDs (scripts/slurm/stop-local-slurm.sh), pass or fail.

Where the cluster cannot be started the tests skip and say why; with
AGON_REQUIRE_SLURM=1 (CI sets it) that skip is a failure instead, so the real
Slurm run can never silently vanish. About 2 minutes on 2 cores.
"""

import os
import platform
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "profiles" / "slurm" / "config.yaml"
START = ROOT / "scripts" / "slurm" / "start-local-slurm.sh"
STOP = ROOT / "scripts" / "slurm" / "stop-local-slurm.sh"
CONFIG = ROOT / "tests" / "data" / "slurm_small.yaml"   # config/test.yaml cut to zero-shot + GRPO
TARGET = "results/slurm/tables/table3_main.csv"
CLUSTER_RULES = {"base": 1, "train": 1, "evaluate": 2}   # jobs of that matrix that go to sbatch
GPU_RULES = {"train", "evaluate"}
LOCAL_RULES = {"prepare", "table"}
START_TIMEOUT_S = 600       # includes apt-get install on a fresh machine
RUN_TIMEOUT_S = 480


# -- the profile itself (no cluster needed) -------------------------------------------------

def load_profile() -> dict:
    return yaml.safe_load(PROFILE.read_text())


def test_profile_targets_slurm_with_safe_defaults():
    p = load_profile()
    assert p["executor"] == "slurm"
    assert p["rerun-incomplete"] is True
    assert isinstance(p["jobs"], int) and p["jobs"] > 0
    assert isinstance(p["retries"], int) and isinstance(p["latency-wait"], int)
    assert int(p["slurm-init-seconds-before-status-checks"]) >= 1
    assert {"mem_mb", "runtime"} <= set(p["default-resources"])
    # account/partition are documented placeholders, not values that only fit one cluster
    text = PROFILE.read_text()
    assert "# slurm_account:" in text and "# slurm_partition:" in text


def test_rules_request_gpus_with_the_name_the_plugin_reads():
    # per-rule resources come from the config (defaults: agon.resources); a profile
    # set-resources entry would override the config's, so the profile has none
    from agon import resources

    assert "set-resources" not in load_profile()
    for rule in GPU_RULES:
        res = resources.for_rule({}, rule)
        assert res.get("gpu") == 1, f"{rule}: `gpu: 1` is what becomes --gpus=1"
        assert {"mem_mb", "runtime"} <= set(res)
    for rule in resources.DEFAULTS:
        assert "gpus" not in resources.for_rule({}, rule), f"{rule}: `gpus` (plural) requests nothing from Slurm"
    with pytest.raises(ValueError, match="gpu: N"):
        resources.for_rule({"resources": {"train": {"gpus": 1}}}, "train")
    assert resources.for_rule({"resources": {"train": {"runtime": 5}}}, "train") == {
        **resources.DEFAULTS["train"], "runtime": 5}
    assert not (set(resources.DEFAULTS) & LOCAL_RULES), "local rules never become jobs; resources there mislead"


def test_a_models_own_resources_merge_over_its_familys_for_its_jobs_only():
    from types import SimpleNamespace

    from agon import resources

    config = {"resources": {"train": {"runtime": 5, "min_gpu_gib": 40}},
              "models": {"small": {}, "big": {"resources": {"train": {"min_gpu_gib": 80, "constraint": "a100_80"}}}}}
    assert resources.for_job(config, "train", "small") == {**resources.DEFAULTS["train"], "runtime": 5, "min_gpu_gib": 40}
    assert resources.for_job(config, "train", "big")["min_gpu_gib"] == 80
    rule = resources.for_rule(config, "train")
    assert rule["runtime"] == 5 and rule["gpu"] == 1  # the same for every model: a value
    for model, gib, constraint in (("small", 40, None), ("big", 80, "a100_80")):
        job = SimpleNamespace(model=model)
        assert rule["min_gpu_gib"](job) == gib and rule["constraint"](job) == constraint  # None: not requested
    assert resources.for_rule(config, "evaluate") == resources.DEFAULTS["evaluate"]
    with pytest.raises(ValueError, match=r"models.big.resources.train.gpus: .* write `gpu: N`"):
        resources.for_job({"models": {"big": {"resources": {"train": {"gpus": 1}}}}}, "train", "big")


def test_a_job_on_a_gpu_smaller_than_its_model_needs_is_refused_with_the_key():
    from agon.resources import gpu_memory_problem

    assert gpu_memory_problem(None, 40 * 2**30, "A100-40GB") is None
    assert gpu_memory_problem(80, int(79.2 * 2**30), "H100 80GB HBM3") is None  # an 80 GB card's report
    problem = gpu_memory_problem(80, int(39.4 * 2**30), "A100-SXM4-40GB")
    assert "needs a GPU with 80 GiB (resources min_gpu_gib" in problem and "A100-SXM4-40GB with 39.4 GiB" in problem


def test_evaluation_jobs_read_their_own_engine_share():
    from agon.resources import job_generation

    config = {"generation": {"backend": "vllm", "gpu_memory_utilization": 0.35, "eval_gpu_memory_utilization": 0.9}}
    assert job_generation(config, "train") == {"backend": "vllm", "gpu_memory_utilization": 0.35}
    for family in ("evaluate", "curve"):
        assert job_generation(config, family) == {"backend": "vllm", "gpu_memory_utilization": 0.9}
    plain = {"generation": {"backend": "vllm", "gpu_memory_utilization": 0.5}}
    assert job_generation(plain, "evaluate") == plain["generation"] and job_generation({}, "train") is None


def test_cheap_rules_are_local():
    rules = "".join(p.read_text() for p in (ROOT / "workflow" / "rules").glob("*.smk"))
    local = set()
    for block in re.findall(r"^localrules:\s*\n((?:[ \t]+\w+,?\s*\n?)+)", rules, re.M):
        local |= set(re.findall(r"\w+", block))
    assert LOCAL_RULES <= local


# -- the real cluster -----------------------------------------------------------------------

def why_no_slurm() -> str | None:
    """Why a local Slurm cluster cannot be started here, or None when it can."""
    if platform.system() != "Linux" or not Path("/etc/debian_version").exists():
        return "needs Debian (Slurm, munge and MariaDB come from Debian's packages via apt)"
    if os.geteuid() != 0:
        return "needs root (installs packages and starts the Slurm, munge and MariaDB daemons)"
    for tool in ("apt-get", "dpkg", "timeout", "runuser"):
        if shutil.which(tool) is None:
            return f"needs `{tool}` on PATH"
    conf = Path("/etc/slurm/slurm.conf")
    if conf.exists() and not conf.is_symlink():
        return "a real Slurm configuration is installed (/etc/slurm/slurm.conf); the test will not touch it"
    return None


def skip_or_fail(reason: str):
    if os.environ.get("AGON_REQUIRE_SLURM") == "1":
        pytest.fail(f"AGON_REQUIRE_SLURM=1 but no local Slurm cluster can run here: {reason}",
                    pytrace=False)
    pytest.skip(f"no local Slurm cluster: {reason} (set AGON_REQUIRE_SLURM=1 to make this an error)")


def tail(path: Path, n: int = 6000) -> str:
    return path.read_text(errors="replace")[-n:] if path.exists() else f"({path} missing)"


def make_test_profile(tmp: Path) -> Path:
    """profiles/slurm with the test overrides of profiles/slurm/README.md, as a profile dir."""
    p = load_profile()
    p["default-resources"].update(slurm_account="root", slurm_partition="main", mem_mb=1000, runtime=10)
    # the local node has the machine's memory only (set-resources overrides the rules' own)
    p["set-resources"] = {rule: {"mem_mb": 1000, "runtime": 10} for rule in CLUSTER_RULES}
    p.update({
        "slurm-init-seconds-before-status-checks": 1,
        "slurm-keep-successful-logs": True,
        "retries": 0,
        "keep-going": False,
        "latency-wait": 5,
        "jobs": 4,
    })
    p.pop("software-deployment-method", None)     # no conda on test machines
    d = tmp / "profile"
    d.mkdir()
    (d / "config.yaml").write_text(yaml.safe_dump(p, sort_keys=False))
    return d


def snakemake_cmd(workdir: Path, *args: str) -> list[str]:
    return ["timeout", "-s", "KILL", str(RUN_TIMEOUT_S), sys.executable, "-m", "snakemake",
            "-s", str(ROOT / "Snakefile"), "-d", str(workdir), "--configfile", str(CONFIG), *args, TARGET]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, request):
    reason = why_no_slurm()
    if reason:
        skip_or_fail(reason)
    tmp = tmp_path_factory.mktemp("slurm")
    state, local_dir, slurm_dir = tmp / "cluster", tmp / "local", tmp / "slurmrun"
    for d in (state, local_dir, slurm_dir):
        d.mkdir()
    env = dict(os.environ)
    # Jobs run on this machine and inherit this environment (the plugin submits
    # with --export=ALL): the rules' `agon` must be on PATH, so put our venv first.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["SLURM_TEST_DIR"] = str(state)
    env["SLURM_CONF"] = str(state / "etc" / "slurm.conf")
    env.pop("SLURM_JOB_ID", None)

    # The local reference run goes in the background while the cluster starts.
    local_log = tmp / "local.log"
    with open(local_log, "w") as fh:
        local = subprocess.Popen(snakemake_cmd(local_dir, "--cores", "2"), env=env,
                                 stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)

    def stop_local():
        # its own process group: killing `timeout` alone would leave snakemake running
        if local.poll() is None:
            try:
                os.killpg(local.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            local.wait()

    def stop_cluster():
        subprocess.run(["bash", str(STOP)], env=env, timeout=120, capture_output=True)

    request.addfinalizer(stop_local)
    request.addfinalizer(stop_cluster)       # finalizers run last-in first-out: cluster first

    start_log = tmp / "start.log"
    with open(start_log, "w") as fh:
        rc = subprocess.run(["timeout", "-s", "KILL", str(START_TIMEOUT_S), "bash", str(START)],
                            env=env, stdout=fh, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        logs = "\n".join(f"--- {p.name}\n{tail(p, 1500)}" for p in sorted((state / "log").glob("*")))
        pytest.fail(f"start-local-slurm.sh failed ({rc}):\n{tail(start_log)}\n{logs}", pytrace=False)

    slurm_log = tmp / "slurm.log"
    with open(slurm_log, "w") as fh:
        rc = subprocess.run(snakemake_cmd(slurm_dir, "--profile", str(make_test_profile(tmp))),
                            env=env, stdout=fh, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        jobs = subprocess.run(["sacct", "-n", "-X", "-P", "-o", "JobID,State,Comment"], env=env,
                              capture_output=True, text=True, timeout=30).stdout
        pytest.fail(f"snakemake on Slurm failed ({rc}{', killed by timeout' if rc == 137 else ''}):\n"
                    f"{tail(slurm_log)}\nsacct:\n{jobs}", pytrace=False)

    rc = local.wait(timeout=RUN_TIMEOUT_S + 30)
    if rc != 0:
        pytest.fail(f"local snakemake failed ({rc}):\n{tail(local_log)}", pytrace=False)

    # Map Slurm job ids to rules from snakemake's own log, then ask Slurm about them.
    log = slurm_log.read_text()
    submitted = {int(jobid): rule for jobid, rule in re.findall(
        r"has been submitted with SLURM jobid (\d+) \(log: \S*/slurm_logs/rule_(\w+)/", log)}
    sacct = {}
    if submitted:
        out = subprocess.run(["sacct", "-n", "-X", "-P", "-j", ",".join(map(str, submitted)),
                              "-o", "JobID,JobName,State,Comment,AllocTRES"],
                             env=env, capture_output=True, text=True, timeout=30, check=True).stdout
        for line in out.splitlines():
            jobid, name, state_, comment, tres = line.split("|")
            sacct[int(jobid)] = {"name": name, "state": state_, "comment": comment, "tres": tres}
    return {"local": local_dir, "slurm": slurm_dir, "log": log, "submitted": submitted, "sacct": sacct}


@pytest.mark.slurm
def test_cluster_rules_went_through_sbatch(runs):
    submitted, sacct = runs["submitted"], runs["sacct"]
    counts = {rule: list(submitted.values()).count(rule) for rule in set(submitted.values())}
    assert counts == CLUSTER_RULES, f"Slurm jobs per rule: {counts}\n{runs['log'][-3000:]}"
    assert set(sacct) == set(submitted), f"sacct knows {sorted(sacct)}, snakemake submitted {sorted(submitted)}"
    for jobid, rule in submitted.items():
        job = sacct[jobid]
        assert job["state"] == "COMPLETED", (jobid, rule, job)
        assert job["name"].startswith("agon_"), job            # slurm-jobname-prefix from the profile
        assert job["comment"].startswith(f"rule_{rule}"), job   # the plugin's rule/wildcards comment


@pytest.mark.slurm
def test_gpu_rules_were_given_a_gpu(runs):
    for jobid, rule in runs["submitted"].items():
        has_gpu = "gres/gpu=1" in runs["sacct"][jobid]["tres"]
        assert has_gpu == (rule in GPU_RULES), (rule, runs["sacct"][jobid])


@pytest.mark.slurm
def test_cheap_rules_ran_locally(runs):
    for rule in LOCAL_RULES:
        assert f"localrule {rule}:" in runs["log"], rule
        assert rule not in runs["submitted"].values()


def result_files(workdir: Path) -> dict[str, bytes]:
    """The comparable outputs: tables, per-problem records and splits (not the
    provenance.json files, which name the machine, times and job ids)."""
    results = workdir / "results" / "slurm"
    files = [*(results / "tables").glob("*.csv"), *(results / "tables").glob("*.md"),
             *(results / "eval").rglob("*.jsonl"), *(results / "data").rglob("*.jsonl")]
    return {str(f.relative_to(results)): f.read_bytes() for f in sorted(files)}


@pytest.mark.slurm
def test_results_equal_a_local_run(runs):
    local, slurm = result_files(runs["local"]), result_files(runs["slurm"])
    assert "tables/table3_main.csv" in local and any(k.startswith("eval/") for k in local)
    assert sorted(slurm) == sorted(local)
    differing = [name for name in local if local[name] != slurm[name]]
    assert not differing, f"Slurm and local runs differ in {differing}"
