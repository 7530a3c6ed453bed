"""The one training loop every method shares.

Per optimizer step t:
  1. take the next `problems_per_step` problems of a seeded one-epoch order (schedule.py);
  2. the method samples and rewards its streams (methods.py);
  3. each stream: group-relative advantages, dropped zero-variance groups,
     clipped policy-gradient loss through its own adapter, over micro-batches of its
     rollouts (their log-probabilities: logprobs.py);
  4. every adapter that received a loss takes one optimizer step.

Every random draw of step t is seeded from (seed, t, stream tag), so a run
resumed from a checkpoint at step t continues exactly as if uninterrupted;
the checkpoint holds adapters, optimizers, schedulers and the step (checkpoints.py).
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

import torch
from tqdm import tqdm

from .. import io, precision, prompts
from ..compact import CompactQwen3, unsupported_reason
from ..evaluate.records import check_steps
from ..generate import Backend, make_backend
from ..models import LoraPolicies
from ..verify.grading import Grader
from . import methods as methods_mod
from .advantages import group_advantages
from .checkpoints import on_sigterm, read_checkpoint
from .logprobs import LOSS_MICRO_BATCH_TOKENS, SamplerGap, micro_batches, sequence_logps
from .loss import dropped_rollouts_scale, policy_loss
from .schedule import epoch_order, lr_schedule


def step_seed(seed: int, step: int, tag: str) -> int:
    return io.derived_seed(seed, step, tag)


@dataclass
class StepContext:
    """What a method may use during one optimizer step."""

    policies: LoraPolicies
    backend: Backend
    fmt: prompts.PromptFormat
    grader: Grader
    method: dict
    sampling: dict
    lam: float
    step: int
    seed: int
    adapters: tuple[str, ...]
    reading_pattern: str | None = None  # a read that checks the rival's steps (the world's), if known

    def sample(self, adapter: str, prompt_texts: list[str], tag: str):
        # each text as the model's turn reads: after the template's prefill, if any (fmt.prefill)
        return self.fmt.completed(self.backend.sample(adapter, prompt_texts, self.sampling,
                                                      seed=step_seed(self.seed, self.step, tag)))

    def grade(self, problem, completion):
        return self.grader(problem, completion)

    def plain_prompt(self, problem):
        return self.fmt.plain(problem)

    def attempt_prompt(self, problem, attempt):
        return self.fmt.with_attempt(problem, attempt)

    @staticmethod
    def summary(text):
        return prompts.summary(text)


# Rollouts per stream on which each step's update KL is measured (`update_kl`): spread over the
# stream's loss rows; one extra no-gradient forward of at most this many rows a step.
UPDATE_KL_ROWS = 16


def probe_rows(n: int, k: int) -> list[int]:
    """min(n, k) distinct indices of range(n), spread evenly over it (the first is 0)."""
    k = min(n, k)
    return [i * n // k for i in range(k)]


class Trainer:
    def __init__(self, base, tokenizer, fmt: prompts.PromptFormat, train_cfg: dict, method: dict,
                 sampling: dict, seed: int, precision_name: str = "fp32", backend_factory=None,
                 grader: Grader | None = None, reading_pattern: str | None = None):
        """`precision_name` is resolved ('bf16' | 'fp32', see precision.py);
        `reading_pattern` (a toy world's) marks a challenger's reads that check the rival's steps;
        `backend_factory(peft_model)` builds the generation backend (default:
        transformers generation over this trainer's adapters)."""
        self.tokenizer, self.fmt, self.cfg, self.method, self.sampling, self.seed = (
            tokenizer, fmt, train_cfg, method, sampling, seed)
        self.precision, self.reading_pattern = precision_name, reading_pattern
        self.method_fn = methods_mod.kind_of(method["kind"]).step
        self.adapters = methods_mod.adapters_for(method)
        init = {"A": train_cfg["adapter_a_init_sigma"] if len(self.adapters) == 2 else 0.0, "B": 0.0}
        # transformers (GradientCheckpointingLayer, 5.x) checkpoints a decoder layer only while
        # that layer's own `training` flag is set: during the loss, those flags alone are set, and
        # every module inside stays in eval mode (no dropout: the gradient is the one without)
        self.checkpointed: list[torch.nn.Module] = []
        if train_cfg.get("gradient_checkpointing", False):
            from transformers.modeling_layers import GradientCheckpointingLayer

            base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            self.checkpointed = [m for m in base.modules() if isinstance(m, GradientCheckpointingLayer)]
            if not self.checkpointed:
                raise ValueError("train.gradient_checkpointing: this model has no layer transformers can checkpoint")
        # train.loss_forward: compact computes the loss with the compact sampler's own forward, over
        # the weights it samples (merged and cast as it merges them, differentiable in the adapter):
        # no autocast casts and one matrix product per fused projection instead of three
        self.compact_config = None
        if train_cfg.get("loss_forward", "transformers") == "compact":
            config = base.config.to_dict()
            reason = unsupported_reason(config)
            if reason:
                raise ValueError(f"train.loss_forward: compact cannot compute this model's loss: {reason}; "
                                 "use loss_forward: transformers")
            if self.checkpointed:
                raise ValueError("train.loss_forward: compact keeps every activation; train.gradient_checkpointing "
                                 "needs train.loss_forward: transformers")
            self.compact_config = config
        self.policies = LoraPolicies(base, self.adapters, train_cfg["lora"], init, seed)
        self.optimizers = {
            # transformers' TrainingArguments names and defaults (adam_beta1 0.9, adam_beta2 0.999), as TRL reads them
            name: torch.optim.AdamW(self.policies.parameters(name), lr=train_cfg["lr"],
                                    betas=(train_cfg.get("adam_beta1", 0.9), train_cfg.get("adam_beta2", 0.999)),
                                    weight_decay=train_cfg.get("weight_decay", 0.0))
            for name in self.adapters
        }
        self.grader = grader or Grader()
        self.step = 0
        self._update_probes: list = []  # this step's (stats, adapter, rollouts, log-probs before the update)
        if backend_factory is None:
            backend_factory = lambda peft_model: make_backend({}, peft_model, tokenizer, self.precision)  # noqa: E731
        self.backend: Backend = backend_factory(self.policies.model)
        self.backend.sync(self.policies)

    def plan(self, problems: list[dict]) -> tuple[list[dict], int]:
        order = epoch_order(problems, self.seed, self.cfg["epochs"])
        per_step = self.cfg["problems_per_step"]
        total = math.ceil(len(order) / per_step)
        if self.cfg.get("max_steps"):
            total = min(total, self.cfg["max_steps"])
        return order, total

    def _schedulers(self, total: int):
        factor = lr_schedule(total, self.cfg["warmup_ratio"], self.cfg.get("lr_scheduler_type", "linear"))
        return {name: torch.optim.lr_scheduler.LambdaLR(opt, factor) for name, opt in self.optimizers.items()}

    # --- the loop -------------------------------------------------------------
    def fit(self, problems: list[dict], metrics_path: Path, checkpoint_path: Path, log=print,
            stop_after: int | None = None, snapshot_dir: Path | None = None, loggers=None) -> list[dict]:
        """Train to the end of the plan, resuming from `checkpoint_path` when it exists.

        `stop_after` ends the process early after that many steps in this call
        (used to test resumption); the checkpoint is written first.

        SIGTERM (what Slurm sends before it kills a preempted or timed-out job)
        lets the current step finish, writes the checkpoint and returns early with
        `self.terminated` set: the caller exits non-zero, and the retry resumes.
        """
        order, total = self.plan(problems)
        schedulers = self._schedulers(total)
        if checkpoint_path.exists():
            self.load_checkpoint(checkpoint_path, schedulers)
            log(f"resumed from {checkpoint_path} at step {self.step}/{total}")
        history = [r for r in (io.read_jsonl(metrics_path) if metrics_path.exists() else [])
                   if r["step"] < self.step]
        try:  # a resumed run's record must reach its checkpoint's step, with no gap
            check_steps(metrics_path, history, self.step)
        except ValueError as e:
            raise ValueError(f"cannot resume from {checkpoint_path}: {e}. Delete {checkpoint_path.parent} "
                             "to train this cell from step 0") from None
        io.write_jsonl(metrics_path, history)  # drop steps logged after the checkpoint
        per_step = self.cfg["problems_per_step"]
        every = self.cfg["checkpoint_every"]
        done_here = 0
        bar = tqdm(total=total, initial=self.step, desc=f"train {self.method['kind']}", unit="step",
                   mininterval=10, file=sys.stderr)
        self.terminated = False
        restore_sigterm = on_sigterm(lambda: setattr(self, "terminated", True))
        try:
            while self.step < total:
                batch = order[self.step * per_step:(self.step + 1) * per_step]
                record = self.train_step(batch, schedulers)
                bar.update(1)
                io.append_jsonl(metrics_path, record)
                history.append(record)
                if loggers is not None:  # TensorBoard / W&B (agon.rl.loggers): they show metrics.jsonl
                    loggers.log(record)
                done_here += 1
                summary = " ".join(
                    f"{k} r={v['reward']:.2f} pass={v['pass_rate']:.2f} len={v['mean_length']:.0f}"
                    for k, v in record["streams"].items())
                log(f"step {self.step}/{total} {summary} ({record['seconds']:.1f}s)")
                stop = self.terminated or bool(stop_after and done_here >= stop_after)
                self.save_snapshot(snapshot_dir, total)  # before the checkpoint: a resume never skips one
                if self.step % every == 0 or self.step == total or stop:
                    self.save_checkpoint(checkpoint_path, schedulers)
                if stop and self.step < total:
                    if self.terminated:
                        log(f"SIGTERM: stopped after step {self.step}/{total}, checkpoint written")
                    break
        finally:
            restore_sigterm()
            if loggers is not None:
                loggers.close()
        bar.close()
        return history

    # --- one step -------------------------------------------------------------
    def train_step(self, problems: list[dict], schedulers) -> dict:
        t0 = time.time()
        ctx = StepContext(self.policies, self.backend, self.fmt, self.grader, self.method,
                          self.sampling, self.cfg["lam"], self.step, self.seed, self.adapters,
                          self.reading_pattern)
        self.policies.model.eval()
        streams = self.method_fn(ctx, problems)
        release = getattr(self.backend, "release_memory", None)
        if release is not None:  # vLLM's engine sleeps through the loss (generation.sleep_during_loss)
            release()
        updated = set()
        record = {"step": self.step, "lr": schedulers[self.adapters[0]].get_last_lr()[0], "streams": {},
                  "grad_norm": {}}
        for stream in streams:
            stepped, stats = self._stream_loss(stream)  # its gradient accumulated, micro-batch by micro-batch
            record["streams"][f"{stream.role}:{stream.adapter}"] = stats
            if stepped:
                updated.add(stream.adapter)
        for name in self.adapters:
            if name in updated:  # the norm before clipping, as TRL logs it
                norm = torch.nn.utils.clip_grad_norm_(self.policies.parameters(name), self.cfg["max_grad_norm"])
                record["grad_norm"][name] = float(norm)
            # An adapter without a loss this step has no gradients; AdamW skips it.
            self.optimizers[name].step()
            self.optimizers[name].zero_grad(set_to_none=True)
            schedulers[name].step()
        self._log_update_kl()
        self.backend.sync(self.policies)
        if torch.cuda.is_available() and next(self.policies.model.parameters()).is_cuda:
            # hand the loss's cached blocks back, so that a vLLM engine beside the trainer
            # (waking from its sleep, or growing its cache) finds them free
            torch.cuda.empty_cache()
        self.step += 1
        record["seconds"] = round(time.time() - t0, 3)
        return record

    def _stream_loss(self, stream: methods_mod.Stream) -> tuple[bool, dict]:
        skipped = sum(c.skipped is not None for c in stream.completions)
        lengths = [c.length for c in stream.completions]
        stats = {
            "reward": sum(stream.rewards) / len(stream.rewards),
            "pass_rate": sum(stream.correct) / len(stream.correct),
            "mean_length": sum(lengths) / len(lengths),
            "groups": 0,
            "dropped_groups": 0,
            "rollouts": len(stream.completions),
            "generated_tokens": sum(lengths),
            "prefill_tokens": sum(len(c.prompt_ids) for c in stream.completions),
            "truncated": sum(c.truncated for c in stream.completions),
            "truncated_share": sum(c.truncated for c in stream.completions) / len(stream.completions),
            # rollouts whose prompt left the context no room (completion.skipped_completion): graded
            # wrong above, but out of their group's statistics and the loss, as if never drawn
            "skipped": skipped,
            **stream.info,
        }
        sampled = [i for i, c in enumerate(stream.completions) if c.skipped is None]
        if not sampled:
            return False, stats
        adv = group_advantages([stream.rewards[i] for i in sampled], [stream.group_ids[i] for i in sampled],
                               scale=self.cfg.get("scale_rewards", "group"))
        stats["groups"], stats["dropped_groups"] = adv.groups, adv.dropped_groups
        # TRL's mask_truncated_completions (DAPO's overlong filtering): a completion the cap cut off
        # keeps its reward in its group's mean and std but is left out of the loss and of its normaliser
        masked = self.cfg.get("mask_truncated_completions", False)
        in_loss = [not (masked and stream.completions[i].truncated) for i in sampled]
        kept = [j for j, k in enumerate(adv.keep) if k and in_loss[j]]  # positions in `sampled`
        if not kept:
            return False, stats
        completions = [stream.completions[sampled[j]] for j in kept]
        advantages = torch.tensor(adv.advantages[kept], dtype=torch.float32)
        loss_tokens = sum(stream.completions[i].length for i, k in zip(sampled, in_loss) if k)
        budget = self.cfg.get("loss_micro_batch_tokens", LOSS_MICRO_BATCH_TOKENS)
        probe = set(probe_rows(len(completions), UPDATE_KL_ROWS))
        old_logps: dict[int, torch.Tensor] = {}
        loss_value, gap = 0.0, SamplerGap()
        with self.loss_pass(stream.adapter) as micro_batch_loss:
            for group in micro_batches(completions, budget):
                part, mask, logp = micro_batch_loss([completions[i] for i in group], advantages[group])
                for row, i in enumerate(group):
                    own = logp[row, logp.shape[1] - completions[i].length:]  # its completion: the row's last columns
                    gap.add(own, completions[i].logprobs)
                    if i in probe:
                        old_logps[i] = own
                # Each micro-batch's share of the whole stream's loss: dropped groups still count in
                # the normaliser, as TRL's zero-advantage rollouts do (a step with few informative
                # groups is a small step, not one group's noise at full size).
                part = part * dropped_rollouts_scale(
                    self.cfg["loss_type"], kept_tokens=int(mask.sum()), all_tokens=loss_tokens,
                    kept_sequences=len(group), all_sequences=len(sampled))
                part.backward()  # the gradient accumulates; this micro-batch's graph is freed
                loss_value += part.item()
        stats["loss"] = loss_value
        stats.update(gap.stats())
        self._update_probes.append((stats, stream.adapter, [completions[i] for i in sorted(old_logps)],
                                    [old_logps[i] for i in sorted(old_logps)]))
        return True, stats

    def _micro_batch_loss(self, loss_model, device, completions, advantages):
        """(the micro-batch's policy loss as policy_loss normalises it, its mask, its log-probs detached).
        `loss_model()` enters the model the loss runs as (`loss_pass`)."""
        for layer in self.checkpointed:
            layer.training = True
        try:
            with loss_model() as model:
                logp, mask = sequence_logps(model, completions, self.sampling["temperature"],
                                            self.tokenizer.pad_token_id)
        finally:
            for layer in self.checkpointed:
                layer.training = False
        ref_logp = None
        if self.cfg["beta"]:
            with torch.no_grad(), self._loss_model(None, device) as model:
                ref_logp, _ = sequence_logps(model, completions, self.sampling["temperature"],
                                             self.tokenizer.pad_token_id)
        # One gradient step per generation batch: the old policy is the current one.
        old = logp.detach()
        loss = policy_loss(logp, old, advantages.to(device), mask, self.cfg["loss_type"], self.cfg["clip_low"],
                           self.cfg["clip_high"], ref_logp, self.cfg["beta"], self.sampling["max_new_tokens"])
        return loss, mask, old

    @contextlib.contextmanager
    def loss_pass(self, adapter: str):
        """One stream's loss pass through `adapter`: yields `micro_batch_loss(completions,
        advantages)` -> (the micro-batch's loss as policy_loss normalises it, its mask, its
        log-probs detached). Call backward on each loss inside the block; the gradient is in the
        adapter's parameters when the block ends.

        transformers: the PeftModel routed to `adapter` under autocast, entered per micro-batch
        (its backward runs outside autocast). compact: one CompactQwen3 for the whole stream,
        over the merged weights made once, as gradient leaves: each micro-batch's backward stops
        at them, and on leaving, their summed gradient runs once through the merge into the
        adapter (the chain rule; the same gradient as merging per micro-batch, which built the
        merged and fused weights again for every micro-batch). The leaves keep the base's dtype
        (fp32 on a CPU), so the micro-batches' gradients sum there, as they summed in the
        adapter's own parameters; the model casts them to the sampling dtype, as the sampler's
        copy is cast."""
        device = next(self.policies.model.parameters()).device
        if self.compact_config is None:
            yield lambda completions, advantages: self._micro_batch_loss(
                lambda: self._loss_model(adapter, device), device, completions, advantages)
            return
        merged = CompactQwen3(self.compact_config, self.policies.merged_weights(adapter, self._base_dtype))
        leaves = merged.map_weights(lambda t: t.detach().requires_grad_(t.requires_grad))
        model = leaves.map_weights(lambda t: t.to(precision.dtype(self.precision)))
        yield lambda completions, advantages: self._micro_batch_loss(
            lambda: contextlib.nullcontext(model), device, completions, advantages)
        pairs = [(m, leaf) for m, leaf in zip(merged.weights(), leaves.weights()) if leaf.grad is not None]
        if pairs:
            torch.autograd.backward([m for m, _ in pairs], [leaf.grad for _, leaf in pairs])

    @contextlib.contextmanager
    def _loss_model(self, adapter: str | None, device):
        """The model the loss pass runs as `adapter` (None: the bare base): the PeftModel under
        autocast (train.loss_forward: transformers), or a CompactQwen3 over the merged weights."""
        if self.compact_config is not None:
            yield CompactQwen3(self.compact_config, self.policies.merged_weights(adapter, precision.dtype(self.precision)))
            return
        with self.policies.use(adapter) as model, precision.autocast(self.precision, device.type):
            yield model

    @property
    def _base_dtype(self) -> torch.dtype:
        return next(p for p in self.policies.model.parameters() if not p.requires_grad).dtype

    def _log_update_kl(self) -> None:
        """Each stream's `update_kl`: the per-token KL(before || after) of this step's update, on the
        probe rollouts its loss pass kept (k3, sampled from the policy before the update)."""
        device = next(self.policies.model.parameters()).device
        budget = self.cfg.get("loss_micro_batch_tokens", LOSS_MICRO_BATCH_TOKENS)
        for stats, adapter, completions, old in self._update_probes:
            log_ratio = []
            with torch.no_grad(), self._loss_model(adapter, device) as model:
                for group in micro_batches(completions, budget):  # by length, as the loss pass: little padding
                    new, _ = sequence_logps(model, [completions[i] for i in group], self.sampling["temperature"],
                                            self.tokenizer.pad_token_id)
                    log_ratio += [new[r, new.shape[1] - completions[i].length:] - old[i] for r, i in enumerate(group)]
            log_ratio = torch.cat(log_ratio)
            stats["update_kl"] = float((log_ratio.exp() - log_ratio - 1).mean())
        self._update_probes = []

    # --- checkpoints and snapshots --------------------------------------------
    def save_checkpoint(self, path: Path, schedulers) -> None:
        state = {
            "step": self.step,
            "adapters": {n: self.policies.state_dict(n) for n in self.adapters},
            "optimizers": {n: o.state_dict() for n, o in self.optimizers.items()},
            "schedulers": {n: s.state_dict() for n, s in schedulers.items()},
        }
        buffer = BytesIO()  # serialised first: a full disk then fails in our write, as an OSError naming it
        torch.save(state, buffer)
        io.write_bytes(path, buffer.getbuffer())

    def load_checkpoint(self, path: Path, schedulers) -> None:
        state = read_checkpoint(path)
        for n in self.adapters:
            self.policies.load_state_dict(n, state["adapters"][n])
            self.optimizers[n].load_state_dict(state["optimizers"][n])
            schedulers[n].load_state_dict(state["schedulers"][n])
        self.step = state["step"]
        self.backend.sync(self.policies)

    def save_snapshot(self, snapshot_dir: Path | None, total: int) -> None:
        """Every `snapshot_every` steps before the last: each adapter to <snapshot_dir>/step<k>/<adapter>/.

        For Figure 7b (src/agon/evaluate/curves.py). Written to a temporary folder and
        renamed, so a step folder is complete or absent; a replayed step replaces it.
        """
        every = self.cfg.get("snapshot_every")
        if snapshot_dir is None or not every or self.step % every or self.step >= total:
            return
        with io.atomic_dir(Path(snapshot_dir) / f"step{self.step}") as tmp:
            for name in self.adapters:
                self.policies.save(name, tmp / name)
