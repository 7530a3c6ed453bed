"""Build the stand-ins of config/paper_cpu.yaml: tiny chat models of the paper's architectures.

    python scripts/make_standin_model.py [--out tests/data/paper_cpu/models/qwen3-tiny]
    python scripts/make_standin_model.py --head-dim 32 --out tests/data/paper_cpu/models/qwen3-tiny-hd32
    python scripts/make_standin_model.py --family qwen3.5 --out tests/data/paper_cpu/models/qwen3.5-tiny
    python scripts/make_standin_model.py --family gemma-4 --out tests/data/paper_cpu/models/gemma-4-tiny

`--head-dim 32` builds the variant that vLLM's CPU attention accepts (it needs head_dim >= 32;
config/paper_cpu_vllm.yaml reads it): 2 query heads and 1 key/value head of 32 in place of
4 and 2 of 16, so every projection keeps its shape.

What it is. A `Qwen3ForCausalLM` (2 layers, hidden size 64, ~0.2M parameters) saved in
a hub snapshot's layout (config.json, model.safetensors, tokenizer.json,
tokenizer_config.json with a chat template), so `kind: hub` reads it exactly as it
reads Qwen/Qwen3-0.6B. Its tokenizer is character level (printable ASCII, the ChatML
control tokens as special tokens, <think> and </think> as added tokens, as in Qwen3),
and its chat template is written here in the style of Qwen3's: ChatML turns, and an
`enable_thinking` switch whose "off" writes an empty <think></think> block.

Why it is trained at all. A randomly initialised model never writes an <answer> block,
so nothing downstream of extraction (math-verify, the code sandbox) would ever run. A
short supervised fit on GENERATED problems (sums, products, small stdin programs, never
the stand-in datasets' problems) teaches it the paper's output shape,
`<think>..</think> summary <answer>..</answer>`, through the same PromptFormat the
pipeline renders (plain and rival-attempt prompts). It then writes well-formed answers
to the stand-in problems, mostly wrong ones: every verifier gets real answers to grade.
It knows no mathematics; its numbers say nothing about the paper.

The two other families (config/paper_cpu_vllm.yaml's qwen3.5-2b and gemma-4-e4b cells) are
built from transformers' own classes and saved as the hub saves them, the vision-language
`ForConditionalGeneration` (a one-layer vision tower, and an audio one for Gemma-4), so vLLM
serves the checkpoint's real architecture: tests/tiny_families.py says which parts of each
family they keep, at the smallest dims vLLM's CPU kernels accept. They are fitted the same way
through the text model, with the same tokenizer and template (a stand-in's, not the family's
own), under the `thinking` mode config/paper.yaml gives the family.

Deterministic on one machine (seeded, one thread); the committed files are its output. The
family fits take 13 (Gemma-4) and 26 (Qwen3.5, transformers' PyTorch fallback of its
Gated DeltaNet kernel) minutes on a 2-core host.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Added (non-special) tokens: Qwen3's <think> pair, and the answer tags, which a real BPE
# vocabulary would also write in a few tokens (a character-level one would spend 17).
THINK_TOKENS = ["<think>", "</think>", "<answer>", "</answer>"]

# ChatML turns as Qwen3 writes them; assistant history keeps only the text after </think>.
QWEN3_STYLE_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if message.role == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' + message.content.split('</think>')[-1].lstrip('\\n') + '<|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}"
    "{%- endif %}"
)

ARCH = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, max_position_embeddings=4096, rope_theta=10000.0,
            tie_word_embeddings=True, rms_norm_eps=1e-6)
# vLLM's CPU attention needs head_dim >= 32: the same projections as 2 (1 key/value) heads of 32
ARCH_HEAD_DIM_32 = {**ARCH, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 32}
STEPS, BATCH, LR, SEED = 700, 16, 3e-3, 20261201
# The other families' language models at the Qwen3 stand-in's width and context; 4 layers and
# their own mechanisms make a step ~5x the Qwen3 stand-in's, so they fit for fewer steps.
FAMILY_DIMS = dict(hidden_size=64, intermediate_size=128, initializer_range=0.02, max_position_embeddings=4096)
FAMILY_STEPS = 400


def build_tokenizer():
    from agon.toy.tokenizer import build_chat_tokenizer

    return build_chat_tokenizer(SPECIALS, THINK_TOKENS, QWEN3_STYLE_TEMPLATE)


# --- generated supervision: the output shape, on problems unlike the stand-in datasets' ---------

# Code tasks in CodeContests' layout (statement, Input, Output sections, examples): the
# stand-in answers each with one of two short programs.
SUM = "print(sum(map(int, input().split())))"
ECHO = "print(input())"
CODE_TASKS = [
    ("You are given {k} integers on one line. Print their sum.", SUM, "the integers", "their sum"),
    ("Chef has {k} boxes of sweets and knows how many are in each. Print the total number of sweets.",
     SUM, "the counts, separated by spaces", "one integer, the total"),
    ("Print the line you are given, unchanged.", ECHO, "one line of at most {k} characters", "the same line"),
    ("A robot repeats what it hears. Given a word, print what the robot says.", ECHO,
     "a word of lowercase letters", "the word"),
]


def code_problem(rng: random.Random) -> tuple[dict, str]:
    statement, program, given, want = CODE_TASKS[rng.randrange(len(CODE_TASKS))]
    k = rng.randint(2, 9)
    description = (f"{statement.format(k=k)}\n\nInput\n\nThe first line contains {given.format(k=k)}.\n\n"
                   f"Output\n\nPrint {want}.")
    examples = []
    for _ in range(rng.randint(1, 2)):
        nums = [rng.randint(0, 99) for _ in range(k)]
        text = " ".join(map(str, nums)) if program == SUM else "".join(rng.choice("abcxyz") for _ in range(k))
        examples.append({"input": text + "\n", "output": (str(sum(nums)) if program == SUM else text) + "\n"})
    problem = {"prompt": description, "tests": [], "source": "codecontests", "public_tests": examples}
    return problem, f"<think>\nread, compute, print\n</think>\nA program.\n<answer>\n{program}\n</answer>"


def generated_examples(rng: random.Random, n: int) -> list[tuple[dict, str]]:
    """(problem, response) pairs: arithmetic with its gold answer, small programs with a right one."""
    out = []
    for i in range(n):
        if i % 2:
            out.append(code_problem(rng))
            continue
        a, b = rng.randint(2, 99), rng.randint(2, 99)
        op, value = rng.choice([("+", a + b), ("*", a * b), ("-", a - b)])
        problem = {"prompt": rng.choice(["What is {a} {op} {b}?", "Compute {a} {op} {b}.",
                                         "Find the value of {a} {op} {b}."]).format(a=a, op=op, b=b)}
        response = f"<think>\n{a}{op}{b}={value}\n</think>\nIt is {value}.\n<answer>{value}</answer>"
        out.append((problem, response))
    return out


def training_texts(tokenizer, n: int, seed: int, thinking: str = "native") -> list[tuple[str, str]]:
    """(prompt, response) texts through the pipeline's own PromptFormat: plain and attempt prompts."""
    from agon import prompts

    fmt = prompts.PromptFormat("chat", tokenizer, thinking=thinking)
    rng = random.Random(seed)
    texts = []
    for problem, response in generated_examples(rng, n):
        if rng.random() < 0.4:  # a challenger's prompt: the question, then a rival's summary
            rival = generated_examples(rng, 1)[0][1] if rng.random() < 0.5 else response
            texts.append((fmt.with_attempt(problem, prompts.summary(rival)), response))
        else:
            texts.append((fmt.plain(problem), response))
        assert prompts.format_ok(response), response
    return texts


def qwen3(tokenizer, arch=ARCH):
    from transformers import Qwen3Config, Qwen3ForCausalLM

    return Qwen3ForCausalLM(Qwen3Config(vocab_size=len(tokenizer), bos_token_id=None,
                                        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                                        **arch))


def family(name: str, tokenizer):
    """A stand-in of `name` (qwen3.5 | gemma-4) as the hub saves it, sized for the tokenizer: four
    ids past the tokenizer's for the image and video markers a Qwen3.5 config names."""
    import torch

    sys.path.insert(0, str(ROOT / "tests"))
    import tiny_families

    torch.manual_seed(SEED)
    return tiny_families.MODELS[name](vocab_size=len(tokenizer) + 4, eos_token_id=tokenizer.eos_token_id,
                                      pad_token_id=tokenizer.pad_token_id, **FAMILY_DIMS)


def train(tokenizer, texts, log=print, arch=ARCH, model=None, steps=STEPS):
    import torch

    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    model = qwen3(tokenizer, arch) if model is None else model
    eos = tokenizer.eos_token
    encoded = []
    for prompt, response in texts:
        p = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        r = tokenizer(response + eos, add_special_tokens=False)["input_ids"]
        encoded.append((p + r, [-100] * len(p) + r))  # the loss reads the response only
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.0)
    rng = random.Random(SEED)
    model.train()
    for step in range(steps):
        batch = rng.sample(encoded, BATCH)
        width = max(len(ids) for ids, _ in batch)
        ids = torch.tensor([x + [tokenizer.pad_token_id] * (width - len(x)) for x, _ in batch])
        labels = torch.tensor([y + [-100] * (width - len(y)) for _, y in batch])
        mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x, _ in batch])
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        for group in opt.param_groups:
            group["lr"] = LR * (1 - step / steps)
        opt.step()
        if step % 50 == 0 or step == steps - 1:
            log(f"step {step}: loss {loss.item():.3f}")
    model.eval()
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "data" / "paper_cpu" / "models" / "qwen3-tiny")
    parser.add_argument("--head-dim", type=int, choices=(16, 32), default=16)
    parser.add_argument("--family", choices=("qwen3", "qwen3.5", "gemma-4"), default="qwen3")
    args = parser.parse_args()
    tokenizer = build_tokenizer()
    if args.family == "qwen3":
        model = train(tokenizer, training_texts(tokenizer, 4000, SEED),
                      arch=ARCH if args.head_dim == 16 else ARCH_HEAD_DIM_32)
    else:  # config/paper.yaml: Qwen3.5 opens <think> itself, Gemma-4 is told to write it
        thinking = {"qwen3.5": "native", "gemma-4": "instructed"}[args.family]
        model = train(tokenizer, training_texts(tokenizer, 4000, SEED, thinking), model=family(args.family, tokenizer),
                      steps=FAMILY_STEPS)
    model.generation_config.do_sample = True
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    args.out.mkdir(parents=True, exist_ok=True)
    if args.family != "qwen3":  # as the hub ships them
        import torch

        model.to(torch.bfloat16)
    model.save_pretrained(args.out)
    tokenizer.save_pretrained(args.out)
    n = sum(p.numel() for p in model.parameters())
    print(f"saved {args.out}: {type(model).__name__}, {n} parameters, vocabulary {len(tokenizer)}")


if __name__ == "__main__":
    main()
