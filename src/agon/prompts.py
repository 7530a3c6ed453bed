"""Prompts and output handling shared by every method.

A completion has the paper's shape:
    <think> private reasoning </think> summary <answer> final answer </answer>

What is public. The reasoning block is private; everything after the LAST
`</think>` is public, up to a `<think>` reopened there and never closed. A
completion that opened `<think>` and never closed it has no public part (it
was cut off, or never stopped thinking). A completion with no reasoning tags
at all (a chat model that ignored the format) has nothing private: all of it
is public.

`summary()` is what a rival gets to read: the public part with every answer
block withheld (the paper's "precaution against copying"), and with any
unterminated `<answer>` or `<think>` tail cut off. The raw reasoning trace is
never shown to a rival.

`extract_answer()` reads the answer from the public part only: the content of
its last complete answer block (innermost, when blocks nest), stripped and
otherwise untouched (`\\boxed{...}` inside the block is left to the verifier;
math-verify reads it, the exact toy verifier accepts bare integers only).

Chat models (prompt_style "chat") get the paper's instructions through the
tokenizer's chat template; see `PromptFormat` for the two thinking modes.
"""

from __future__ import annotations

import re

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"

# A complete answer block whose content holds no other opener: the innermost
# block when blocks nest, and the first closer after its opener.
_ANSWER_RE = re.compile(
    re.escape(ANSWER_OPEN) + r"((?:(?!" + re.escape(ANSWER_OPEN) + r").)*?)" + re.escape(ANSWER_CLOSE), re.S)
_FORMAT_RE = re.compile(
    r"^\s*<think>(?P<think>(?:(?!<think>|</think>).)*)</think>"
    r"(?P<summary>(?:(?!<think>|</think>|<answer>|</answer>).)*)"
    r"<answer>(?P<answer>(?:(?!<answer>|</answer>).)+)</answer>\s*$",
    re.S,
)

# Templates. The toy model reads characters, so its templates are compact
# markers ("R:" introduces the rival's attempt); chat models get the paper's
# instructions in words (see CHAT_* below).
TOY_PLAIN = "Q: {question}\n"
TOY_WITH_ATTEMPT = "Q: {question}\nR: {attempt}\n"  # several attempts: one "R:" line each, in order

CHAT_SYSTEM = (
    "Reason privately inside <think> </think>, then write a short summary of your "
    "derivation, then give only the final answer inside <answer> </answer>."
)
CHAT_WITH_ATTEMPT = (
    "{question}\n\n"
    "Below is an attempt that may or may not be correct. Do not trust it and do not "
    "paraphrase it: verify it, solve the problem independently, and where the attempt "
    "is wrong, get it right.\n\nAttempt:\n{attempt}"
)
# The mixture's second pass (evaluate/protocols.py, "moa"): an agent refines its own
# attempt after reading the other agent's, with the challenger's caution about both.
CHAT_REFINE = (
    "{question}\n\n"
    "Below are your own earlier attempt and another model's attempt. Either may be wrong. "
    "Do not trust them and do not paraphrase them: verify them against each other, "
    "solve the problem independently, and give your refined answer.\n\n"
    "Your earlier attempt:\n{own}\n\nThe other model's attempt:\n{other}"
)
# A code problem (one graded by running its `tests`) tells a chat model the language
# and the I/O convention the sandbox grades (Python 3, standard input and output) and
# shows the problem's public tests, as a contestant sees them (the paper's setting);
# the private and generated tests that grade are never shown.
CHAT_CODE = (
    "{description}\n\n"
    "Write a complete Python 3 program that reads the input from standard input and "
    "writes the output to standard output. Inside <answer> </answer> put only the "
    "program (a Markdown code fence around it is fine); any other language fails."
)
CHAT_CODE_EXAMPLE = "Example {n}\nInput:\n{input}\nOutput:\n{output}"
# Public tests longer than this are cut (with a note): a prompt must fit the context.
MAX_EXAMPLE_CHARS = 2000
# What a chat challenger reads when the rival's draft has no summary (it never
# closed its reasoning, or wrote nothing after it). The toy shows an empty "R:".
CHAT_EMPTY_ATTEMPT = "(the attempt ended without a summary)"

THINKING_MODES = ("native", "instructed")

# A reasoning block the chat template itself opened (Qwen3.5/R1-style `<think>\n`)
# or opened and closed empty (Qwen3 with enable_thinking=False) at the very end
# of the generation prompt.
_PREFILLED_THINK_RE = re.compile(r"<think>\s*(?:</think>\s*)?$")


def public_part(completion: str) -> str:
    """What is not private reasoning: the text after the last `</think>` (the whole
    text when there is none), cut at a `<think>` opened there and never closed."""
    return completion.split(THINK_CLOSE)[-1].split(THINK_OPEN)[0]


def extract_answer(completion: str) -> str | None:
    """Content of the last complete answer block of the public part, stripped; None when there is none."""
    found = _ANSWER_RE.findall(public_part(completion))
    return found[-1].strip() if found else None


def format_ok(completion: str) -> bool:
    """Well-formed: one closed reasoning block, then a summary, then one answer block, then nothing."""
    return _FORMAT_RE.match(completion) is not None


def summary(completion: str) -> str:
    """What a rival may read: the public part, answer blocks removed.

    A draft that never closed its reasoning block has no summary (empty
    string): everything it wrote is private reasoning. An unterminated answer
    block, or a reasoning block reopened after the last `</think>`, is cut off
    with everything after it.
    """
    after = _ANSWER_RE.sub("", public_part(completion))
    return after.split(ANSWER_OPEN)[0].replace(ANSWER_CLOSE, "").strip()


def _example_text(text: str) -> str:
    text = text if text.endswith("\n") else text + "\n"
    if len(text) > MAX_EXAMPLE_CHARS:
        text = text[:MAX_EXAMPLE_CHARS] + f"... ({len(text) - MAX_EXAMPLE_CHARS} more characters)\n"
    return "```\n" + text + "```"


def chat_question(problem: dict) -> str:
    """The problem as a chat model reads it: a math question as it is; a code problem
    (`tests`) with the language, the I/O convention and its public tests."""
    if "tests" not in problem:
        return problem["prompt"]
    parts = [CHAT_CODE.format(description=problem["prompt"].strip())]
    for n, t in enumerate(problem.get("public_tests") or [], 1):
        parts.append(CHAT_CODE_EXAMPLE.format(n=n, input=_example_text(t["input"]),
                                              output=_example_text(t["output"])))
    return "\n\n".join(parts)


def toy_plain(question: str) -> str:
    return TOY_PLAIN.format(question=question)


def toy_with_attempt(question: str, attempt: str) -> str:
    # Newlines in the attempt would break the one-line marker format.
    return TOY_WITH_ATTEMPT.format(question=question, attempt=attempt.replace("\n", " "))


def toy_with_attempts(question: str, attempts: list[str]) -> str:
    return TOY_PLAIN.format(question=question) + "".join(f"R: {a.replace(chr(10), ' ')}\n" for a in attempts)


class PromptFormat:
    """Turns problems (and rival summaries) into model input strings.

    style "toy":  the compact markers above (character-level toy model).
    style "chat": the paper's instructions through the tokenizer's chat template
                  (`apply_chat_template(messages, tokenize=False,
                  add_generation_prompt=True[, enable_thinking=...])`).

    Thinking modes of a chat model (`thinking`, the model's config key):
      native      the model has a thinking mode whose reasoning tags are
                  <think> </think> (Qwen3, Qwen3.5): the template is rendered
                  with enable_thinking=True, and the model opens <think> itself.
      instructed  the model has no such mode (SmolLM2), or its thinking uses
                  other tags: the system prompt (CHAT_SYSTEM, identical in both
                  modes) tells it to write <think> ... </think> as text; a
                  template with an enable_thinking switch gets enable_thinking=False.
    What the template writes after the assistant header:
      * an empty closed block (Qwen3 with thinking off): removed, so that the
        model writes its own reasoning block as instructed (`prefill_removed`);
      * an opened `<think>` (Qwen3.5, DeepSeek-R1 style): kept, since the model
        was trained to reason on from there and may never write `<think>` itself.
        It is the `prefill`: `completed` puts it back in front of every
        completion's text, so format_ok, summary and extract_answer parse the
        whole structure (the loss still scores only the generated tokens).

    A template that rejects the system role (some Gemma templates raise) gets
    the system text as the first paragraph of the user message instead
    (`system_role` is False then).

    The rival's attempt is inserted with the tokenizer's special tokens
    (`<|im_end|>`, ...) deleted, so a summary cannot close the user turn or
    open a fake one; an empty summary reads CHAT_EMPTY_ATTEMPT. Self-refine
    uses the same attempt prompt as the challenger: the model is not told
    whose attempt it reads, so the control differs from the cascade only in
    who wrote the attempt.
    """

    def __init__(self, style: str, tokenizer=None, thinking: str | None = None):
        if style not in ("toy", "chat"):
            raise ValueError(f"unknown prompt style {style!r}; known: toy, chat")
        self.style, self.tokenizer, self.thinking = style, tokenizer, thinking
        self.prefill_removed = ""
        self.prefill = ""
        self.system_role = True
        if style == "toy":
            if thinking is not None:
                raise ValueError("prompt style 'toy' has no thinking mode (thinking applies to chat models)")
            return
        template = getattr(tokenizer, "chat_template", None)
        if not template:
            raise ValueError("prompt style 'chat' needs a tokenizer with a chat template "
                             "(this model's tokenizer has none: use a chat/instruct model)")
        if thinking not in THINKING_MODES:
            raise ValueError(f"prompt style 'chat' needs thinking: one of {', '.join(THINKING_MODES)} "
                             f"(got {thinking!r})")
        self._switch = "enable_thinking" in template
        if thinking == "native" and THINK_OPEN not in template:
            raise ValueError("thinking: native, but the chat template never writes <think>: this model's "
                             "reasoning (if any) uses other tags; use thinking: instructed")
        try:
            self._render("x", system=True)
        except Exception:  # jinja's TemplateError (e.g. "System role not supported") and kin
            self.system_role = False
            self._render("x", system=False)

    def _render(self, user: str, system: bool) -> str:
        if system:
            messages = [{"role": "system", "content": CHAT_SYSTEM}, {"role": "user", "content": user}]
        else:
            messages = [{"role": "user", "content": f"{CHAT_SYSTEM}\n\n{user}"}]
        kwargs = {}
        if self._switch:
            kwargs["enable_thinking"] = self.thinking == "native"
        text = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, **kwargs)
        if not isinstance(text, str):
            raise TypeError(f"apply_chat_template(tokenize=False) returned {type(text).__name__}, not str")
        m = _PREFILLED_THINK_RE.search(text)
        if m and THINK_CLOSE in m.group(0):
            self.prefill_removed = m.group(0)
            text = text[: m.start()]
        elif m:
            self.prefill = text[m.start():]
        return text

    def completed(self, completions: list) -> list:
        """`completions` (generate.Completion) with the template's prefill in front of each text:
        what the model's turn reads as, for parsing and grading (ids are untouched)."""
        if not self.prefill:
            return completions
        import dataclasses

        return [dataclasses.replace(c, text=self.prefill + c.text) for c in completions]

    def _chat(self, user: str) -> str:
        return self._render(user, self.system_role)

    def sanitize(self, text: str) -> str:
        """`text` without the tokenizer's special tokens (control tokens of the chat format)."""
        specials = {str(t) for t in getattr(self.tokenizer, "all_special_tokens", [])}
        for tok in getattr(self.tokenizer, "added_tokens_decoder", {}).values():
            if getattr(tok, "special", False):
                specials.add(str(tok))
        for tok in sorted(specials, key=len, reverse=True):
            if tok:
                text = text.replace(tok, "")
        return text

    def plain(self, problem: dict) -> str:
        if self.style == "toy":
            return toy_plain(problem["prompt"])
        return self._chat(chat_question(problem))

    def with_attempt(self, problem: dict, attempt: str) -> str:
        if self.style == "toy":
            return toy_with_attempt(problem["prompt"], attempt)
        attempt = self.sanitize(attempt).strip() or CHAT_EMPTY_ATTEMPT
        return self._chat(CHAT_WITH_ATTEMPT.format(question=chat_question(problem), attempt=attempt))

    def refining(self, problem: dict, own: str, other: str) -> str:
        """The mixture's second pass: an agent's own earlier attempt, then the other agent's.
        The toy reads them as two "R:" lines, own first (the two-attempt prompts its base
        was trained on)."""
        if self.style == "toy":
            return toy_with_attempts(problem["prompt"], [own, other])
        own, other = (self.sanitize(a).strip() or CHAT_EMPTY_ATTEMPT for a in (own, other))
        return self._chat(CHAT_REFINE.format(question=chat_question(problem), own=own, other=other))
