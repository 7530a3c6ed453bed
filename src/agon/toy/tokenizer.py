"""An offline character-level tokenizer for the toy model.

Every character is one token; the paper's structural tags (<think>, </think>,
<answer>, </answer>) are single tokens so the format reward and the summary
extraction see them exactly as they would in a real chat model's output.
"""

from __future__ import annotations

import string

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

STRUCTURE_TOKENS = ["<think>", "</think>", "<answer>", "</answer>"]
PAD, EOS, UNK = "<pad>", "<eos>", "<unk>"
CHARACTERS = string.digits + "+-*/=?;,:.()[]<>!|_ \n" + string.ascii_letters + "'\"#%&$@^~{}"


def build_tokenizer(vocab_size: int | None = None) -> PreTrainedTokenizerFast:
    """The toy tokenizer. `vocab_size` pads its vocabulary with filler tokens up to a model's
    (a random model at a real model's vocabulary samples every id, and each must decode);
    no text encodes to a filler, since every character is a token of its own."""
    vocab = {tok: i for i, tok in enumerate([PAD, EOS, UNK])}
    for ch in CHARACTERS:
        vocab.setdefault(ch, len(vocab))
    for tok in STRUCTURE_TOKENS:
        vocab[tok] = len(vocab)
    for i in range(len(vocab), vocab_size or 0):
        vocab[f"<f{i}>"] = i
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    # One token per character (newlines included); added tokens are matched first.
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    core.decoder = decoders.Fuse()
    core.add_tokens(STRUCTURE_TOKENS)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token=PAD, eos_token=EOS, unk_token=UNK,
        padding_side="left",  # decoder-only generation pads on the left
    )
    return tok


def build_chat_tokenizer(specials: list[str], added: list[str], template: str) -> PreTrainedTokenizerFast:
    """A character-level tokenizer for a chat stand-in: printable ASCII, `specials` as special
    tokens (ChatML's: the first is the pad, the third the end of turn), `added` as plain added
    tokens (Qwen3's <think> pair), and `template` as its chat template.
    Used by scripts/make_standin_model.py (config/paper_cpu.yaml's Qwen3 stand-in) and the
    chat-template tests."""
    vocab = {t: i for i, t in enumerate(specials + added + [UNK])}
    for ch in string.printable:
        vocab.setdefault(ch, len(vocab))
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    core.decoder = decoders.Fuse()
    core.add_special_tokens(specials)
    core.add_tokens(added)
    tok = PreTrainedTokenizerFast(tokenizer_object=core, eos_token=specials[2], pad_token=specials[0], unk_token=UNK)
    tok.chat_template = template
    return tok
