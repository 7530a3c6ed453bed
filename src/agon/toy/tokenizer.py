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


def build_tokenizer() -> PreTrainedTokenizerFast:
    vocab = {tok: i for i, tok in enumerate([PAD, EOS, UNK])}
    for ch in CHARACTERS:
        vocab.setdefault(ch, len(vocab))
    for tok in STRUCTURE_TOKENS:
        vocab[tok] = len(vocab)
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
