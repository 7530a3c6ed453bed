# The rules' input functions and params: thin calls into the planner (src/agon/plan/), which
# holds the results layout, what every table and figure reads, and every job's spec, and is
# tested without snakemake (tests/test_plan.py). Here: wildcard constraints, environments,
# resources, and the wildcards' values handed to the planner.
import functools
import os

from snakemake.exceptions import WorkflowError

from agon.plan import SPLITS, UNTRAINED, Plan, PlanError, fingerprint, spec_json
from agon.plan import needs as plan_needs


wildcard_constraints:
    dataset="[A-Za-z0-9_]+",
    model="[A-Za-z0-9_.-]+",
    method="[A-Za-z0-9_]+",
    cell="[A-Za-z0-9_]+",
    seed="[0-9]+",
    row="[A-Za-z0-9_]+",
    table="[A-Za-z0-9_]+",


PLAN = Plan(config, ROOT, R)
LAYOUT = PLAN.layout
SANDBOX_CHECK = LAYOUT.sandbox_check
FIG7B = plan_needs.fig7b(config)
FIG7A_TABLE = plan_needs.fig7a_table(config)

# Conda environments (used with --sdm conda; a plain run ignores them). Only vLLM
# generation needs the GPU stack (vLLM and its CUDA torch): every other job, the toy
# default and the CPU stand-in of the paper config included, runs in envs/cpu.yaml.
# (On Linux that env's PyPI torch is a CUDA build too: a transformers-backend job on a
# GPU node runs there.) tests/test_job_envs.py lists the env of every job.
CPU_ENV = "../../envs/cpu.yaml"
GPU_ENV = "../../envs/gpu.yaml"


def job_env(wc=None):
    """The conda env of a train, evaluate or curve job: the GPU stack only for vLLM generation."""
    return GPU_ENV if config.get("generation", {}).get("backend") == "vllm" else CPU_ENV


def rule_resources(family):
    from agon.resources import for_rule

    return for_rule(config, family)


def name_regex(names):
    """A wildcard constraint matching exactly `names` (nothing at all when empty)."""
    import re

    return "|".join(re.escape(n) for n in names) or "(?!x)x"


# --- input functions and params: the wildcards' values to the planner ---------------

def planned(fn):
    """A config the planner cannot follow (a missing model file, a pinned base not there) stops
    the DAG with the planner's message, naming the key, and no traceback."""

    @functools.wraps(fn)
    def call(wc):
        try:
            return fn(wc)
        except PlanError as e:
            raise WorkflowError(str(e)) from None

    return call


@planned
def base_inputs(wc):
    return PLAN.base_inputs(wc.model)


def base_spec(wc):
    return PLAN.base_spec(wc.model)


def base_priority(wc):
    return PLAN.base_priority(wc.model)


@planned
def fetch_inputs(wc):
    return PLAN.fetch_inputs(wc.model)


@planned
def fetch_spec(wc):
    return PLAN.fetch_spec(wc.model)


@planned
def train_inputs(wc):
    return PLAN.train_inputs(wc.model)


@planned
def train_spec(wc):
    return PLAN.train_spec(wc.model, wc.method, int(wc.seed))


@planned
def eval_inputs(wc):
    return PLAN.eval_inputs(wc.model, wc.cell, int(wc.seed))


@planned
def eval_spec(wc):
    return PLAN.eval_spec(wc.model, wc.cell, int(wc.seed))


@planned
def curve_inputs(wc):
    return PLAN.curve_inputs(wc.model, wc.row, int(wc.seed))


@planned
def curve_spec(wc):
    return PLAN.curve_spec(wc.model, wc.row, int(wc.seed))


def curve_records(wc):
    return PLAN.curve_records(wc.model, wc.row, int(wc.seed))


def table_cells(wc):
    return PLAN.eval_dirs(PLAN.table_cells(wc.table))


def table_records(wc):
    return PLAN.records_of(wc.table)


def table_metrics(wc):
    return PLAN.table_metrics(wc.table)


def table_splits(wc):
    return PLAN.table_splits(wc.table)


def table_spec(wc):
    return PLAN.table_spec(wc.table)


def all_cells(wc=None):
    return PLAN.eval_dirs(PLAN.all_cells())


def all_metrics(wc=None):
    return PLAN.all_metrics()


def model_metrics(wc):
    return PLAN.all_metrics(wc.model)


def trained_models(wc=None):
    return PLAN.trained_models()


def blind_challengers():
    """Methods whose challenger reads no draft: the training curves set no target for its conversion."""
    return plan_needs.blind_challengers(PLAN.config)
