"""Prompts and output handling shared by every method.

A completion has the paper's shape:
    <think> private reasoning </think> summary <answer> final answer </answer>

`summary()` is what a rival gets to read: the text AFTER the reasoning block,
with the answer block withheld (the paper's "precaution against copying").
The raw reasoning trace is never shown to a rival.
"""

from __future__ import annotations

import re

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"

_ANSWER_RE = re.compile(re.escape(ANSWER_OPEN) + r"(.*?)" + re.escape(ANSWER_CLOSE), re.S)
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
TOY_WITH_ATTEMPT = "Q: {question}\nR: {attempt}\n"

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


def extract_answer(completion: str) -> str | None:
    """Content of the LAST answer block, stripped; None when there is none."""
    found = _ANSWER_RE.findall(completion)
    return found[-1].strip() if found else None


def format_ok(completion: str) -> bool:
    """Well-formed: one closed reasoning block, then a summary, then one answer block, then nothing."""
    return _FORMAT_RE.match(completion) is not None


def summary(completion: str) -> str:
    """What a rival may read: text after </think>, answer blocks removed.

    A draft that never closed its reasoning block has no summary (empty
    string): everything it wrote is private reasoning.
    """
    if THINK_CLOSE not in completion:
        return ""
    after = completion.split(THINK_CLOSE)[-1]
    after = _ANSWER_RE.sub("", after)
    # An unterminated answer block is withheld too.
    if ANSWER_OPEN in after:
        after = after.split(ANSWER_OPEN)[0]
    return after.strip()


def toy_plain(question: str) -> str:
    return TOY_PLAIN.format(question=question)


def toy_with_attempt(question: str, attempt: str) -> str:
    # Newlines in the attempt would break the one-line marker format.
    return TOY_WITH_ATTEMPT.format(question=question, attempt=attempt.replace("\n", " "))


class PromptFormat:
    """Turns problems (and rival summaries) into model input strings.

    style "toy":  the compact markers above (character-level toy model).
    style "chat": the paper's instructions through the tokenizer's chat template.
    """

    def __init__(self, style: str, tokenizer=None, enable_thinking: bool | None = None):
        if style not in ("toy", "chat"):
            raise ValueError(f"unknown prompt style {style!r}; known: toy, chat")
        if style == "chat" and getattr(tokenizer, "chat_template", None) is None:
            raise ValueError("prompt style 'chat' needs a tokenizer with a chat template")
        self.style, self.tokenizer, self.enable_thinking = style, tokenizer, enable_thinking

    def _chat(self, user: str) -> str:
        messages = [{"role": "system", "content": CHAT_SYSTEM}, {"role": "user", "content": user}]
        kwargs = {} if self.enable_thinking is None else {"enable_thinking": self.enable_thinking}
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, **kwargs)

    def plain(self, problem: dict) -> str:
        if self.style == "toy":
            return toy_plain(problem["prompt"])
        return self._chat(problem["prompt"])

    def with_attempt(self, problem: dict, attempt: str) -> str:
        if self.style == "toy":
            return toy_with_attempt(problem["prompt"], attempt)
        return self._chat(CHAT_WITH_ATTEMPT.format(question=problem["prompt"], attempt=attempt))
