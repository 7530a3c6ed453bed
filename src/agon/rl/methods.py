"""What one optimizer step of each training method samples and rewards.

A method is a config entry (`methods.<name>`: a `kind` plus its knobs) and a kind is
registered once, as a `MethodKind`: its step function `(ctx, problems) -> list[Stream]`,
the knobs it reads (a JSON schema each, checked at config load), the adapters it trains,
how it is deployed, and where Table 1 puts it. The shared loop (trainer.py) turns every
stream into group-relative advantages and a loss on the stream's own adapter; the config
checks, the workflow and the reports read the registration, and list no kinds themselves.
A kind outside this package is named `module:attribute` (a MethodKind in an importable
module): docs/extending.md walks through one.

Built-in kinds (config `kind`):
  grpo   one adapter, G rollouts per problem on the plain prompt, standalone reward.
  pair   Algorithm 1 and its relatives. A drafter samples N drafts per problem
         (standalone reward); the challenger samples N rollouts, one per draft,
         rewarded against the drafts by `mode` (coop | adv | margin). Knobs:
           exchange  visible: the challenger reads summary(a_i) (Agon, coop)
                     hidden:  plain prompt, a_i used only in the reward
                              (the per-rollout hidden-rival cell the paper left empty)
                     shared:  plain prompt, ONE draft per problem is every
                              rollout's rival (the paper's inert shared-rival cell)
           roles     rotate (A drafts on even steps, B on odd), fixed (A always
                     drafts), self (one adapter drafts and then reads its own
                     draft: self-refine)
           gamma     length tie-break weight (Sec. 5.6), 0 = off
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from . import rewards


@dataclass
class Stream:
    """One group-normalised stream of rollouts that updates one adapter."""

    adapter: str
    role: str
    completions: list  # generate.Completion
    rewards: list[float]
    group_ids: list
    correct: list[int]
    info: dict = field(default_factory=dict)


def roles(step: int, scheme: str, names: tuple[str, ...]) -> tuple[str, str]:
    """(drafter, challenger) for optimizer step `step`."""
    if scheme == "rotate":
        return (names[0], names[1]) if step % 2 == 0 else (names[1], names[0])
    if scheme == "fixed":
        return names[0], names[1]
    if scheme == "self":
        return names[0], names[0]
    raise ValueError(f"unknown roles scheme {scheme!r}; known: rotate, fixed, self")


def expand(problems: list[dict], n: int) -> tuple[list[dict], list[str]]:
    """Each problem n times, with one group id per batch slot.

    Ids are per slot, not per problem: a problem drawn twice in one step
    (several epochs) forms two groups, never one merged group.
    """
    expanded = [p for p in problems for _ in range(n)]
    group_ids = [f"{j}:{p['id']}" for j, p in enumerate(problems) for _ in range(n)]
    return expanded, group_ids


def grpo(ctx, problems: list[dict]) -> list[Stream]:
    adapter = ctx.adapters[0]
    expanded, group_ids = expand(problems, ctx.method["group_size"])
    comps = ctx.sample(adapter, [ctx.plain_prompt(p) for p in expanded], tag="policy")
    grades = [ctx.grade(p, c) for p, c in zip(expanded, comps)]
    reward = [rewards.standalone(c, phi, ctx.lam) for c, phi in grades]
    return [Stream(adapter, "policy", comps, reward, group_ids, [c for c, _ in grades])]


def pair(ctx, problems: list[dict]) -> list[Stream]:
    m = ctx.method
    N = m["group_size"]
    drafter, challenger = roles(ctx.step, m["roles"], ctx.adapters)
    expanded, group_ids = expand(problems, N)

    drafts = ctx.sample(drafter, [ctx.plain_prompt(p) for p in expanded], tag="drafter")
    draft_grades = [ctx.grade(p, d) for p, d in zip(expanded, drafts)]
    c_a = [c for c, _ in draft_grades]
    drafter_stream = Stream(drafter, "drafter", drafts,
                            [rewards.standalone(c, phi, ctx.lam) for c, phi in draft_grades],
                            group_ids, c_a)

    exchange = m["exchange"]
    if exchange == "visible":
        prompts = [ctx.attempt_prompt(p, ctx.summary(d.text)) for p, d in zip(expanded, drafts)]
        rival = list(range(len(expanded)))
    elif exchange in ("hidden", "shared"):
        prompts = [ctx.plain_prompt(p) for p in expanded]
        # shared: the first draft of each problem is every rollout's rival
        rival = [i - (i % N) if exchange == "shared" else i for i in range(len(expanded))]
    else:
        raise ValueError(f"unknown exchange {exchange!r}; known: visible, hidden, shared")

    chall = ctx.sample(challenger, prompts, tag="challenger")
    chall_grades = [ctx.grade(p, b) for p, b in zip(expanded, chall)]
    chall_rewards, converted = [], 0
    for i, ((c_b, phi_b), b) in enumerate(zip(chall_grades, chall)):
        a = rival[i]
        chall_rewards.append(rewards.challenger(
            m["mode"], c_b, c_a[a], phi_b, ctx.lam, m.get("gamma", 0.0), b.length, drafts[a].length))
        converted += c_b * (1 - c_a[a])
    rivals_wrong = sum(1 - c_a[a] for a in rival)
    info = {"conversion_rate": converted / rivals_wrong if rivals_wrong else None}
    if ctx.reading_pattern and exchange == "visible":  # how often the challenger checks the draft's steps
        checks = re.compile(ctx.reading_pattern)
        info["verifying_share"] = sum(bool(checks.search(b.text)) for b in chall) / len(chall)
    if exchange == "shared":
        info.update(shared_rival_gap(chall_rewards, [rewards.cooperative(c, phi, ctx.lam) for c, phi in chall_grades],
                                     group_ids))
    challenger_stream = Stream(challenger, "challenger", chall, chall_rewards, group_ids,
                               [c for c, _ in chall_grades], info)
    return [drafter_stream, challenger_stream]


def shared_rival_gap(own: list[float], coop: list[float], group_ids: list) -> dict:
    """How far a shared-rival stream's advantages are from coop's on the same rollouts.

    With one rival per group, adv's reward is 2c + c(1 - c_a) + lam phi: coop's exactly when the
    rival is right, and 3c + lam phi = 1.5 (2c + (2 lam / 3) phi) when it is wrong, i.e. coop
    with the format weight cut to 2/3. So the paper's "inert by construction" holds when the
    rival is right, or the format term is constant within the group; otherwise the
    advantages differ (tests/test_rewards.py). Logged per step: groups whose advantages differ
    from coop's by more than 1e-3 (beyond what TRL's eps = 1e-4 in the std alone moves), and
    the largest gap.
    """
    from .advantages import group_advantages

    a, b = group_advantages(own, group_ids), group_advantages(coop, group_ids)
    gaps: dict = {}
    for g, x, y in zip(group_ids, a.advantages, b.advantages):
        gaps[g] = max(gaps.get(g, 0.0), abs(float(x) - float(y)))
    return {"groups_unlike_coop": sum(v > 1e-3 for v in gaps.values()),
            "max_gap_to_coop": max(gaps.values(), default=0.0)}


@dataclass(frozen=True)
class MethodKind:
    """Everything the pipeline needs to know about a kind of training method.

    step      what one optimizer step samples and rewards: (ctx, problems) -> [Stream]
    knobs     {key: JSON schema} of the method's keys beyond `kind` and `group_size`
    required  the knobs a method of this kind must set
    adapters  method -> the adapter names it trains ("A", or "A" and "B")
    deploys   how a trained method is evaluated as its own table row: "single" (one pass of its
              policy on the plain prompt) or "cascade" (a draft, then a pass that reads it), or a
              callable method -> either (a pair deploys as it trained: a cascade only when its
              challenger read the draft; see `deployment`)
    classify  method -> (Table 1 role, competition, exchange, qualifiers): role "2x2 cell" with
              "competition" / "no competition" and "exchange" / "no exchange", or another role
              (e.g. "training control") with None for both; qualifiers are printed beside its name
    """

    step: Callable
    adapters: Callable[[dict], tuple[str, ...]]
    classify: Callable[[dict], tuple[str, str | None, str | None, list[str]]]
    deploys: str | Callable[[dict], str]
    knobs: dict = field(default_factory=dict)
    required: tuple[str, ...] = ()

    def deployment(self, method: dict) -> str:
        """The protocol of `method`'s own table row: "single" or "cascade"."""
        return self.deploys(method) if callable(self.deploys) else self.deploys


def _classify_pair(m: dict) -> tuple[str, str | None, str | None, list[str]]:
    if m.get("roles") == "self":
        return "training control", None, None, ["one adapter reads its own previous attempt"]
    competition = "competition" if m["mode"] in ("adv", "margin") else "no competition"
    exchange = "exchange" if m["exchange"] == "visible" else "no exchange"
    qualifiers = []
    if m["exchange"] == "hidden":
        qualifiers.append("per-rollout hidden rival")
    elif m["exchange"] == "shared":
        qualifiers.append("group-constant shared rival, inert by construction")
    if m["mode"] == "margin":
        qualifiers.append("margin reward")
    if m.get("roles") == "fixed":
        qualifiers.append("fixed roles")
    if m.get("gamma"):
        qualifiers.append(f"length tie-break gamma={m['gamma']}")
    return "2x2 cell", competition, exchange, qualifiers


KINDS: dict[str, MethodKind] = {
    "grpo": MethodKind(step=grpo, adapters=lambda m: ("A",), deploys="single",
                       classify=lambda m: ("2x2 cell", "no competition", "no exchange", [])),
    "pair": MethodKind(
        # A challenger trained on the plain prompt (shared or hidden rival) never read a draft:
        # its row is one pass, with no draft to read (paper, Table 3 and Table 7's caption).
        step=pair, deploys=lambda m: "cascade" if m["exchange"] == "visible" else "single",
        classify=_classify_pair,
        adapters=lambda m: ("A",) if m.get("roles") == "self" else ("A", "B"),
        knobs={"mode": {"enum": ["coop", "adv", "margin"]}, "exchange": {"enum": ["visible", "hidden", "shared"]},
               "roles": {"enum": ["rotate", "fixed", "self"]}, "gamma": {"type": "number", "minimum": 0}},
        required=("mode", "exchange", "roles")),
}


def kind_of(name: str) -> MethodKind:
    """The registered kind `name`: a built-in, or `module:attribute` (imported once, then kept).

    Raises ValueError saying what is wrong with the name."""
    if name in KINDS:
        return KINDS[name]
    module_name, _, attribute = name.partition(":")
    if not (module_name and attribute):
        raise ValueError(f"unknown kind {name!r} (built in: {', '.join(sorted(k for k in KINDS if ':' not in k))}; "
                         "a kind of your own is `module:attribute`, a MethodKind in an importable module)")
    import importlib

    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"kind {name!r}: cannot import {module_name!r} ({e}); is it on PYTHONPATH?") from None
    kind = getattr(module, attribute, None)
    if not isinstance(kind, MethodKind):
        raise ValueError(f"kind {name!r}: {module_name}.{attribute} is not an agon.rl.methods.MethodKind")
    KINDS[name] = kind
    return kind


def knob_schema(kind: MethodKind) -> dict:
    """The JSON schema of one `methods.<name>` entry of this kind."""
    return {"type": "object", "additionalProperties": False, "required": ["kind", "group_size", *kind.required],
            "properties": {"kind": {"type": "string"}, "group_size": {"type": "integer", "minimum": 2},
                           **kind.knobs}}


def adapters_for(method: dict) -> tuple[str, ...]:
    """Adapter names a method trains (its kind says)."""
    return tuple(kind_of(method["kind"]).adapters(method))
