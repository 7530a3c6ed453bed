"""Supervised data and training for the toy base model.

Completions have the paper's shape. The data is built so the paper's
phenomena can exist in the toy world:
  * false starts: a step is sometimes first written wrong, retracted with
    " no", and redone, so reasoning length can grow or shrink under RL;
  * reading an attempt: some prompts carry a rival attempt (correct or with
    one wrong step, propagated) after "R:"; the target verifies each step,
    retracting the attempt's wrong ones, so a challenger prompt is in
    distribution and copying a wrong attempt is never the target.
Level-5 problems (find `?` in a*?+b=c) are a search instead (`search_solution`):
candidates are tried in random order (or, with `bisect_prob`, by bisection), each failed
check retracted with " no".
A reader checks the candidate each rival summary claims first, and answers at once
when it passes; otherwise it searches the rest. A wrong attempt is a wrong claim or
an empty summary (a rival that ran out of tokens). Prompts with two attempts (the
mixture's final stage) are in distribution for this level only.
The recipe's `world` picks whose examples train the base (agon.worlds: this module is the
search world's; sft_code.py the code world's; worlds/carries.py holds its own).
"""

from __future__ import annotations

import math
import random
import time

import torch

from .. import precision, prompts, worlds
from ..data import toy_math
from ..data.toy_math import Step


def _corrupt(value: int, rng: random.Random) -> int:
    return value + rng.choice([-10, -2, -1, 1, 2, 10])


def attempt_steps(expression: str, wrong_index: int | None, rng: random.Random) -> list[tuple[Step, int]]:
    """Steps as a solver with one slip at `wrong_index` would write them (the slip propagates)."""
    if wrong_index is None:
        return toy_math.derive(expression)
    true_value = toy_math.derivation(expression)[wrong_index].value
    return toy_math.derive(expression, {wrong_index: _corrupt(true_value, rng)})


def render_summary(written: list[tuple[Step, int]]) -> str:
    return ",".join(step.render(value) for step, value in written)


def solution(steps: list[Step], rng: random.Random, false_start_prob: float,
             attempt: list[tuple[Step, int]] | None = None) -> list[tuple[str, bool]]:
    """A correct completion as (text, trained) pieces.

    A retracted step's wrong value is not trained on (trained=False): the model
    learns to retract a wrong value when one appears, not to produce one.
    When `attempt` is given, its wrong steps are the ones retracted.
    """
    pieces: list[tuple[str, bool]] = [("<think>", True)]
    for i, step in enumerate(steps):
        sep = ";" if i else ""
        wrong = None
        if attempt is not None and attempt[i][1] != step.value:
            wrong = attempt[i][1]
        elif attempt is None and rng.random() < false_start_prob:
            wrong = _corrupt(step.value, rng)
        if wrong is not None:
            pieces += [(f"{sep}{step.render('')}", True), (str(wrong), False), (" no", True)]
            sep = ";"
        pieces.append((f"{sep}{toy_math.column_work(step)}{step.render()}", True))
    summary = render_summary([(s, s.value) for s in steps])
    pieces.append((f"</think>{summary}<answer>{steps[-1].value}</answer>", True))
    return pieces


def search_solution(search: toy_math.Search, rng: random.Random, claimed: list[int | None],
                    bisect_prob: float = 0.0) -> list[tuple[str, bool]]:
    """A correct search: the claimed candidates first (in order, once each), then the
    others in random order, each failed check retracted with " no"; the summary claims
    the candidate that passed. A search with no claim is, with `bisect_prob`, a bisection
    instead (`Search.bisection`): each retraction also says which way to go, ` no+` or
    ` no-`, so it needs at most 4 tries where a blind order needs up to 8."""
    answer = search.answer
    order = list(dict.fromkeys(x for x in claimed if x in toy_math.CANDIDATES))
    if not order and rng.random() < bisect_prob:
        tries = search.bisection()[:-1]
        verdicts = [f" no{search.direction(x)};" for x in tries]
    else:
        rest = [x for x in toy_math.CANDIDATES if x not in order]
        rng.shuffle(rest)
        order += rest
        tries = order[:order.index(answer)]
        verdicts = [" no;"] * len(tries)
    think = "".join(search.check(x) + v for x, v in zip(tries, verdicts)) + search.check(answer)
    return [(f"<think>{think}</think>{search.claim(answer)}<answer>{answer}</answer>", True)]


def search_attempt(search: toy_math.Search, rng: random.Random, wrong_prob: float) -> str:
    """A rival summary: the true claim, or (with `wrong_prob`) a wrong claim or none at all."""
    if rng.random() >= wrong_prob:
        return search.claim(search.answer)
    if rng.random() < 0.5:
        return ""
    return search.claim(rng.choice([x for x in toy_math.CANDIDATES if x != search.answer]))


def search_example(problem: dict, rng: random.Random, attempt_prob: float, attempt_wrong_prob: float,
                   two_attempts_prob: float, bisect_prob: float) -> tuple[str, list[tuple[str, bool]]]:
    search = toy_math.Search.parse(problem["prompt"])
    if rng.random() >= attempt_prob:
        return prompts.toy_plain(problem["prompt"]), search_solution(search, rng, [], bisect_prob)
    count = 2 if rng.random() < two_attempts_prob else 1
    attempts = [search_attempt(search, rng, attempt_wrong_prob) for _ in range(count)]
    prompt = prompts.toy_with_attempts(problem["prompt"], attempts)  # one "R:" line per attempt
    return prompt, search_solution(search, rng, [toy_math.Search.claimed(a) for a in attempts], bisect_prob)


def example(problem: dict, rng: random.Random, attempt_prob: float, attempt_wrong_prob: float,
            false_start_prob: float, two_attempts_prob: float = 0.0,
            bisect_prob: float = 0.0) -> tuple[str, list[tuple[str, bool]]]:
    if problem["difficulty"] == toy_math.SEARCH_LEVEL:
        return search_example(problem, rng, attempt_prob, attempt_wrong_prob, two_attempts_prob, bisect_prob)
    expression = problem["prompt"].removesuffix("=?")
    steps = toy_math.derivation(expression)
    if rng.random() < attempt_prob:
        wrong = rng.randrange(len(steps)) if rng.random() < attempt_wrong_prob else None
        attempt = attempt_steps(expression, wrong, rng)
        prompt = prompts.toy_with_attempt(problem["prompt"], render_summary(attempt))
        return prompt, solution(steps, rng, false_start_prob, attempt)
    return prompts.toy_plain(problem["prompt"]), solution(steps, rng, false_start_prob)


def build_model(arch: dict, tokenizer):
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=arch["hidden_size"],
        num_hidden_layers=arch["num_layers"],
        num_attention_heads=arch["num_heads"],
        num_key_value_heads=arch["num_kv_heads"],
        head_dim=arch["hidden_size"] // arch["num_heads"],
        intermediate_size=arch["intermediate_size"],
        max_position_embeddings=arch["max_positions"],
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    return Qwen3ForCausalLM(config)


def encode_batch(tokenizer, examples):
    """Right-padded prompt+completion+eos ids; labels only on trained completion pieces."""
    rows, labels = [], []
    for prompt, pieces in examples:
        ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        lab = [-100] * len(ids)
        for text, trained in pieces:
            piece = tokenizer(text, add_special_tokens=False)["input_ids"]
            ids += piece
            lab += piece if trained else [-100] * len(piece)
        rows.append(ids + [tokenizer.eos_token_id])
        labels.append(lab + [tokenizer.eos_token_id])
    width = max(map(len, rows))
    pad = tokenizer.pad_token_id
    ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows])
    lab = torch.tensor([l + [-100] * (width - len(l)) for l in labels])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
    return ids, mask, lab


BUCKETS = 4
# How a batch's loss weighs its tokens (`base.loss_weighting`):
#   batch  the mean over the batch's trained tokens (transformers' loss). With batches bucketed by
#          length, a token of a batch of short examples then weighs more than one of a batch of long
#          ones: a short completion's choices are learned as more common than the data has them (a
#          carries base learned to copy a rival 0.52 of the time from 0.35 of its reads);
#   token  every trained token of the buffer alike: the batch's token sum over the buffer's mean
#          tokens a batch, the objective of unbucketed batches.
LOSS_WEIGHTINGS = ("batch", "token")


def _trained_tokens(labels) -> int:
    """The tokens a causal LM's loss averages over: labels past the first position that are not -100."""
    return int((labels[:, 1:] != -100).sum())


def _length_bucketed_batches(examples, batch_size, rng):
    """Split a pool into batches of similar length (less padding, same data), in random order."""
    size = lambda ex: len(ex[0]) + sum(len(t) for t, _ in ex[1])  # noqa: E731
    ordered = sorted(examples, key=size)
    batches = [ordered[i:i + batch_size] for i in range(0, len(ordered), batch_size)]
    rng.shuffle(batches)
    return batches


def train_base(tokenizer, cfg: dict, exclude_prompts: set[str], seed: int, log=print):
    """Train the toy base from scratch for a FIXED number of steps (deterministic in seed)."""
    torch.manual_seed(seed)
    rng = random.Random(seed)
    model = build_model(cfg["arch"], tokenizer)
    if cfg.get("attn_implementation"):
        model.set_attn_implementation(cfg["attn_implementation"])
    # fp32 master weights; a bf16 autocast forward when the job resolved bf16 (agon.jobs.base)
    mixed = cfg.get("precision", "fp32")
    if mixed not in ("bf16", "fp32"):
        raise ValueError(f"train_base: precision {mixed!r} is not resolved (bf16 | fp32): precision.resolve it first")
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=0.01)
    steps, warmup = cfg["steps"], max(1, int(0.05 * cfg["steps"]))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps))
    )
    # A stream of fresh problems from the recipe's world; held-out and validation prompts never appear.
    world = worlds.get(cfg.get("world"))
    pool_seed = rng.randrange(2**31)
    stream = (p for p in world.stream(pool_seed, weights=cfg.get("level_weights"))
              if p["prompt"] not in exclude_prompts)
    model.train()
    start = time.time()
    history = []
    buffer: list = []
    weighting = cfg.get("loss_weighting", "batch")
    if weighting not in LOSS_WEIGHTINGS:
        raise ValueError(f"models.<m>.base.loss_weighting: {weighting!r} is not one of {LOSS_WEIGHTINGS}")
    for step in range(steps):
        if not buffer:
            buffer = [encode_batch(tokenizer, batch) for batch in _length_bucketed_batches(
                [world.example(next(stream), rng, cfg) for _ in range(BUCKETS * cfg["batch_size"])],
                cfg["batch_size"], rng)]
            per_batch = sum(_trained_tokens(labels) for _, _, labels in buffer) / len(buffer)
        ids, mask, labels = buffer.pop()
        with precision.autocast(mixed):
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        weight = _trained_tokens(labels) / per_batch if weighting == "token" else 1.0
        (loss * weight).backward()  # token: the batch's token sum over the buffer's mean tokens a batch
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        if step % 50 == 0 or step == steps - 1:
            history.append({"step": step, "loss": round(loss.item(), 4),
                            "seconds": round(time.time() - start, 1)})
            log(f"base step {step}/{steps} loss {loss.item():.4f} ({time.time() - start:.0f}s)")
    model.eval()
    return model, history
