"""What one optimizer step of each training method samples and rewards.

A method is a function `(ctx, problems) -> list[Stream]`, plus its config.
The shared loop (trainer.py) turns every stream into group-relative
advantages and a loss on the stream's own adapter; nothing else differs
between methods.

Methods (config `kind`):
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


METHODS: dict[str, Callable] = {"grpo": grpo, "pair": pair}


def adapters_for(method: dict) -> tuple[str, ...]:
    """Adapter names a method trains: one for grpo and self-refine, the pair otherwise."""
    if method["kind"] == "grpo" or method.get("roles") == "self":
        return ("A",)
    return ("A", "B")
