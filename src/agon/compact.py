"""A compact sampler for small Qwen3-architecture models, in plain torch.

For the toy world's tiny models, transformers' `generate` spends most of its
time in per-op overhead, not arithmetic: three q/k/v and two gate/up matmuls
per layer, `repeat_kv` copies for grouped-query attention, a `torch.cat` of
the whole KV cache per token, a dozen dtype casts. This sampler does the same
computation with fused q|k|v and gate|up weights, a preallocated KV cache
written in place, grouped-query attention by reshaping the queries (no key
copies), and rows that have stopped dropped from the batch.

It is the same model: the forward follows `transformers.models.qwen3`
op for op (RMSNorm in fp32, q/k norms per head, default RoPE, softmax in
fp32), and sampling follows `generate`'s temperature -> top-p -> multinomial.
tests/test_compact.py checks the logits against transformers and greedy
decoding token for token. Random draws differ from `generate`'s (rows leave
the batch), so sampled completions are equal in distribution, not in value.

Used by `generation.backend: compact` (generate.py); for any other
architecture use the transformers backend.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

import torch
import torch.nn.functional as F


def unsupported_reason(config: dict) -> str | None:
    """Why a model with this config (config.json's keys) cannot run here, or None when it can."""
    if config.get("model_type") != "qwen3":
        return f"model_type {config.get('model_type')!r} (the compact sampler implements qwen3 only)"
    rope = config.get("rope_parameters") or {}
    if rope.get("rope_type", "default") != "default":
        return f"rope_type {rope.get('rope_type')!r} (only the default RoPE)"
    if config.get("use_sliding_window"):
        return "sliding-window attention"
    if config.get("attention_bias"):
        return "attention bias"
    if config.get("hidden_act") != "silu":
        return f"hidden_act {config.get('hidden_act')!r}"
    return None


def require_supported(config: dict) -> None:
    """Raise, naming the config key, when a model with `config` is not one this sampler implements."""
    reason = unsupported_reason(config)
    if reason:
        raise ValueError(f"generation.backend: compact cannot sample this model: {reason}; "
                         "use backend: transformers")


@dataclass
class _Layer:
    input_norm: torch.Tensor
    qkv: torch.Tensor          # [(heads + 2 kv_heads) * head_dim, hidden]
    qk_norm: torch.Tensor      # [heads + kv_heads, head_dim]: q_norm per query head, then k_norm per kv head
    o: torch.Tensor
    post_norm: torch.Tensor
    gate_up: torch.Tensor      # [2 * intermediate, hidden]
    down: torch.Tensor


class CompactQwen3:
    """The weights of one Qwen3ForCausalLM, fused for sampling (a snapshot: rebuild after the weights change).

    `config` has config.json's keys; `weights` the model's state-dict names, already in
    the sampling dtype (a tied lm_head may be absent, as save_pretrained leaves it). Weights
    that carry a gradient keep it through the fusing (the trainer's loss pass:
    `completion_logits` over `LoraPolicies.merged_weights`).
    """

    def __init__(self, config: dict, weights: Mapping[str, torch.Tensor]):
        require_supported(config)
        self.heads, self.kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
        self.head_dim = config.get("head_dim") or config["hidden_size"] // self.heads
        self.eps = config["rms_norm_eps"]
        self.embed = weights["model.embed_tokens.weight"]
        self.dtype = self.embed.dtype
        self.layers = []
        for i in range(config["num_hidden_layers"]):
            w = {name.removeprefix(f"model.layers.{i}."): t for name, t in weights.items()
                 if name.startswith(f"model.layers.{i}.")}
            self.layers.append(_Layer(
                input_norm=w["input_layernorm.weight"],
                qkv=torch.cat([w["self_attn.q_proj.weight"], w["self_attn.k_proj.weight"],
                               w["self_attn.v_proj.weight"]]),
                qk_norm=torch.cat([w["self_attn.q_norm.weight"].expand(self.heads, -1),
                                   w["self_attn.k_norm.weight"].expand(self.kv_heads, -1)]),
                o=w["self_attn.o_proj.weight"], post_norm=w["post_attention_layernorm.weight"],
                gate_up=torch.cat([w["mlp.gate_proj.weight"], w["mlp.up_proj.weight"]]),
                down=w["mlp.down_proj.weight"]))
        self.norm = weights["model.norm.weight"]
        if "lm_head.weight" in weights:
            self.lm_head = weights["lm_head.weight"]
        elif config.get("tie_word_embeddings"):
            self.lm_head = self.embed
        else:
            raise KeyError("lm_head.weight missing and tie_word_embeddings is not set")
        theta = config["rope_parameters"]["rope_theta"]
        d = self.head_dim
        self.inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float) / d))
        self.cos = self.sin = torch.empty((0, d), dtype=self.dtype)

    def map_weights(self, fn) -> "CompactQwen3":
        """A copy whose every weight is `fn(weight)` (a tensor shared by two names, a tied head,
        stays shared): e.g. a cast to another dtype, or gradient leaves (`detach().requires_grad_()`)."""
        done: dict[int, torch.Tensor] = {}

        def one(t: torch.Tensor) -> torch.Tensor:
            if id(t) not in done:
                done[id(t)] = fn(t)
            return done[id(t)]

        copy = object.__new__(CompactQwen3)
        copy.__dict__.update(self.__dict__)
        copy.layers = [_Layer(**{f.name: one(getattr(layer, f.name)) for f in fields(_Layer)}) for layer in self.layers]
        copy.embed, copy.norm, copy.lm_head = one(self.embed), one(self.norm), one(self.lm_head)
        if copy.embed.dtype != self.dtype:
            copy.dtype = copy.embed.dtype
            copy.cos = copy.sin = torch.empty((0, self.head_dim), dtype=copy.dtype)
        return copy

    def weights(self) -> list[torch.Tensor]:
        """Every weight tensor, each once."""
        seen: dict[int, torch.Tensor] = {}
        for layer in self.layers:
            for f in fields(_Layer):
                seen.setdefault(id(getattr(layer, f.name)), getattr(layer, f.name))
        for t in (self.embed, self.norm, self.lm_head):
            seen.setdefault(id(t), t)
        return list(seen.values())

    @classmethod
    def from_model(cls, model) -> "CompactQwen3":
        """From a transformers Qwen3ForCausalLM (its current weights and dtype)."""
        return cls(model.config.to_dict(), model.state_dict())

    def _rope_table(self, length: int) -> None:
        """cos/sin for positions [0, length), as transformers computes them (fp32, then cast)."""
        if self.cos.shape[0] >= length:
            return
        freqs = torch.arange(length, dtype=torch.float)[:, None] * self.inv_freq[None, :]
        emb = torch.cat([freqs, freqs], dim=-1).to(self.embed.device)
        self.cos, self.sin = emb.cos().to(self.dtype), emb.sin().to(self.dtype)

    def _rms(self, x, weight):
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return weight * x32.to(self.dtype)

    def _rope(self, x, cos, sin):
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * cos + rotated * sin

    def forward(self, ids, positions, cache, start: int, key_bias):
        """Logits (fp32) of the last position for `ids` [B, L] at `positions` [B, L].

        Writes keys/values to cache[layer] (keys transposed) at [start, start + L); attends to
        [0, start + L) with `key_bias` [B, 1, L, start + L] (0 or -inf-like).
        """
        x = self._layers(ids, positions, cache, start, key_bias)
        last = self._rms(x[:, -1], self.norm)
        return F.linear(last, self.lm_head).float()

    def completion_logits(self, ids, attention, positions, last: int):
        """Logits (in the model's dtype) of the last `last` positions of left-padded rows `ids`
        [B, L], in one pass with no cache: the trainer's loss (`attention` [B, L] marks real
        tokens, `positions` count from each row's first). Autograd runs through it to whatever
        weights carry a gradient: in training, the sampler's own weights, merged as it merges
        them (`LoraPolicies.merged_weights`), so the loss's log-probabilities are the sampler's,
        up to the order of float sums."""
        L = ids.shape[1]
        self._rope_table(int(positions.max()) + 1)
        allowed = torch.ones((L, L), dtype=torch.bool, device=ids.device).tril()[None] & attention.bool()[:, None, :]
        bias = torch.zeros(allowed.shape, dtype=self.dtype, device=ids.device)
        bias = bias.masked_fill(~allowed, torch.finfo(self.dtype).min)[:, None]
        x = self._layers(ids, positions, None, 0, bias)
        return F.linear(self._rms(x[:, -last:], self.norm), self.lm_head)

    def _layers(self, ids, positions, cache, start: int, key_bias):
        """The hidden states after the last decoder layer, [B, L, hidden] (see `forward`). With
        `cache` None (a whole sequence at once, `start` 0) keys and values are used as computed."""
        B, L = ids.shape
        h, kvh, d = self.heads, self.kv_heads, self.head_dim
        groups = h // kvh
        end = start + L
        cos, sin = self.cos[positions][:, :, None, :], self.sin[positions][:, :, None, :]
        x = F.embedding(ids, self.embed)
        for i, layer in enumerate(self.layers):
            qkv = F.linear(self._rms(x, layer.input_norm), layer.qkv)
            # q and k heads normed and rotated in one pass (both act row by row, so the
            # values are those of two separate passes; half the ops per layer)
            qk = self._rope(self._rms(qkv[..., :(h + kvh) * d].view(B, L, h + kvh, d), layer.qk_norm), cos, sin)
            q, k, v = qk[:, :, :h], qk[:, :, h:], qkv[..., (h + kvh) * d:]
            if cache is None:
                keys, values = k.permute(0, 2, 3, 1), v.view(B, L, kvh, d).transpose(1, 2)
            else:
                keys, values = cache[i]
                keys[:, :, :, start:end] = k.permute(0, 2, 3, 1)
                values[:, :, start:end] = v.view(B, L, kvh, d).transpose(1, 2)
                values = values[:, :, :end]
            # Grouped-query attention without copying keys: query head j uses
            # kv head j // groups (transformers' repeat_kv order). With a cache, the scores are
            # computed against the whole key buffer and cut to [0, end): each score is one
            # product over head_dim either way (the same tokens and log-probs, bit for bit, in
            # bf16 and fp32: docs/measurements.md), and a matmul over a sliced buffer copies
            # the slice first.
            q = q.transpose(1, 2).reshape(B, kvh, groups * L, d)
            scores = torch.matmul(q, keys)[..., :end] * (d ** -0.5)
            scores = scores.view(B, kvh, groups, L, end) + key_bias[:, :, None]
            probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(self.dtype)
            out = torch.matmul(probs.view(B, kvh, groups * L, end), values)
            out = out.view(B, h, L, d).transpose(1, 2).reshape(B, L, h * d)
            x = x + F.linear(out, layer.o)
            gate, up = F.linear(self._rms(x, layer.post_norm), layer.gate_up).chunk(2, dim=-1)
            x = x + F.linear(F.silu(gate) * up, layer.down)
        return x


def _keep_rows(keys, values, keep, written: int):
    """The cache's rows `keep` (a row may be taken more than once), in new buffers of the same
    length: only the `written` positions are copied. The rest is uninitialised until written: values there are never read, keys only
    into score columns that `_layers` cuts away before the softmax."""
    new_keys = keys.new_empty((len(keep),) + keys.shape[1:])
    new_values = values.new_empty((len(keep),) + values.shape[1:])
    new_keys[..., :written] = keys[keep, ..., :written]
    new_values[:, :, :written] = values[keep, :, :written]
    return new_keys, new_values


# Stopped rows stay in the batch (computed, never drawn from) until they are this share of it;
# then the batch is compacted. A compaction copies every live row's KV cache; a stopped row
# costs one row of the forward per token. Compacting at the first stopped row, as `generate`
# drops nothing and this sampler once did at every stop, spent more in copies than it saved
# (docs/measurements.md, "Where the time goes").
COMPACT_WHEN_STOPPED = 0.125


def _filtered_scores(logits: torch.Tensor, sampling: dict) -> torch.Tensor:
    """`generate`'s warpers: logits / temperature, then top-p (tokens outside it at -inf, at least one kept)."""
    scores = logits / sampling["temperature"]
    top_p = sampling.get("top_p", 1.0)
    if top_p < 1.0:
        sorted_scores, order = torch.sort(scores, descending=False)
        cumulative = sorted_scores.softmax(dim=-1).cumsum(dim=-1)
        remove_sorted = cumulative <= (1 - top_p)
        remove_sorted[..., -1:] = False
        remove = remove_sorted.scatter(1, order, remove_sorted)
        scores = scores.masked_fill(remove, float("-inf"))
    return scores


def _next_tokens(logits: torch.Tensor, sampling: dict) -> torch.Tensor:
    """One token per row: argmax at temperature 0, else a draw from the filtered distribution."""
    if sampling["temperature"] == 0:
        return logits.argmax(dim=-1)
    return torch.multinomial(_filtered_scores(logits, sampling).softmax(dim=-1), num_samples=1).squeeze(1)


def _distinct_rows(prompt_ids: list[list[int]]) -> tuple[list[list[int]], torch.Tensor]:
    """The distinct prompts in first-seen order, and each prompt's index among them."""
    first: dict[tuple[int, ...], int] = {}
    index = [first.setdefault(tuple(row), len(first)) for row in prompt_ids]
    return [list(row) for row in first], torch.tensor(index)


@torch.no_grad()
def sample_ids(model: CompactQwen3, prompt_ids: list[list[int]], sampling: dict,
               stop_ids: tuple[int, ...], logprobs: list[list[float]] | None = None) -> list[list[int]]:
    """One completion per prompt (token ids, ending in one of `stop_ids` when the model stopped).

    `logprobs`, when given a list, receives one list per prompt: each drawn token's
    log-probability under logits / temperature (before top-p), the distribution the
    trainer's loss scores. Draws from torch's global generator: the caller seeds it.

    A prompt that repeats (a GRPO group's 16 rows) is prefilled once and its cache copied to
    every row that has it: a row's prefill does not depend on the other rows of its batch.
    """
    stops = torch.tensor(sorted(set(stop_ids)), dtype=torch.long)
    B = len(prompt_ids)
    P = max(map(len, prompt_ids))
    max_new = sampling["max_new_tokens"]
    total = P + max_new
    model._rope_table(total)
    distinct, index = _distinct_rows(prompt_ids)
    U = len(distinct)
    ids = torch.zeros((U, P), dtype=torch.long)
    key_mask = torch.zeros((U, total), dtype=torch.bool)
    for i, row in enumerate(distinct):  # left padding, as the tokenizer's
        ids[i, P - len(row):] = torch.tensor(row)
        key_mask[i, P - len(row):] = True
    key_mask[:, P:] = True
    positions = (key_mask[:, :P].long().cumsum(-1) - 1).clamp(min=0)
    # Keys are stored transposed, [B, kv_heads, head_dim, position]: q @ keys is then a plain
    # matmul over the whole buffer (a transposed slice, and a slice of the buffer at all, costs
    # bf16 matmuls a copy: docs/measurements.md, "Where the time goes").
    keys_shape = (U, model.kv_heads, model.head_dim, total)
    values_shape = (U, model.kv_heads, total, model.head_dim)
    cache = [(torch.zeros(keys_shape, dtype=model.dtype), torch.zeros(values_shape, dtype=model.dtype))
             for _ in model.layers]
    neg = torch.finfo(model.dtype).min
    causal = torch.ones((P, P), dtype=torch.bool).tril()
    allowed = causal[None] & key_mask[:, None, :P]
    bias = torch.zeros((U, 1, P, P), dtype=model.dtype).masked_fill(~allowed[:, None], neg)
    logits = model.forward(ids, positions, cache, 0, bias)
    if U < B:  # every row from its prompt's prefill
        logits, positions, key_mask = logits[index], positions[index], key_mask[index]
        cache = [_keep_rows(keys, values, index, P) for keys, values in cache]
    last_pos = positions[:, -1]
    rows = torch.arange(B)  # original row of each batch slot
    live = torch.ones(B, dtype=torch.bool)  # slots still sampling (a stopped one waits for the next compaction)
    drawn_tokens = torch.zeros((B, max_new), dtype=torch.long)
    drawn_logps = torch.zeros((B, max_new))
    lengths = torch.full((B,), max_new, dtype=torch.long)
    decode_bias = torch.zeros((B, 1, 1, total), dtype=model.dtype).masked_fill(~key_mask[:, None, None], neg)
    tokens = torch.zeros(B, dtype=torch.long)
    for t in range(max_new):
        slots = live.nonzero().squeeze(1)
        live_logits = logits[slots]  # draws only for live rows, in row order, as if the batch held no other
        drawn = _next_tokens(live_logits, sampling)
        tokens[slots] = drawn
        drawn_tokens[rows[slots], t] = drawn
        if logprobs is not None:
            temperature = sampling["temperature"] or 1.0
            drawn_logps[rows[slots], t] = torch.log_softmax(live_logits.float() / temperature, dim=-1).gather(
                -1, drawn[:, None]).squeeze(1)
        stopped = torch.isin(drawn, stops)
        if bool(stopped.any()):
            lengths[rows[slots[stopped]]] = t + 1
            live[slots[stopped]] = False
        alive = int(live.sum())
        if not alive or t == max_new - 1:
            break
        if alive <= (1 - COMPACT_WHEN_STOPPED) * len(rows):  # drop stopped rows from the batch
            keep = live.nonzero().squeeze(1)
            rows, tokens, last_pos, decode_bias = rows[keep], tokens[keep], last_pos[keep], decode_bias[keep]
            live = live[keep]
            cache = [_keep_rows(k, v, keep, P + t) for k, v in cache]
        last_pos = last_pos + 1
        logits = model.forward(tokens[:, None], last_pos[:, None], cache, P + t,
                               decode_bias[..., :P + t + 1])
    out = [drawn_tokens[r, :n].tolist() for r, n in enumerate(lengths.tolist())]
    if logprobs is not None:
        logprobs[:] = [drawn_logps[r, :n].tolist() for r, n in enumerate(lengths.tolist())]
    return out
