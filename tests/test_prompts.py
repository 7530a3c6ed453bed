from agon import prompts

GOOD = "<think>28*2=56;59+56=115</think>28*2=56,59+56=115<answer>115</answer>"


def test_extract_answer():
    assert prompts.extract_answer(GOOD) == "115"
    assert prompts.extract_answer("<answer> 7 </answer> then <answer>8</answer>") == "8"
    assert prompts.extract_answer("<think>x</think>no answer block") is None
    assert prompts.extract_answer("<answer>unterminated") is None


def test_format():
    assert prompts.format_ok(GOOD)
    assert prompts.format_ok("  " + GOOD + "\n")
    assert not prompts.format_ok("28*2=56<answer>115</answer>")  # no reasoning block
    assert not prompts.format_ok("<think>a</think>s<answer>1</answer>trailing")
    assert not prompts.format_ok("<think>a</think><think>b</think>s<answer>1</answer>")
    assert not prompts.format_ok("<think>a</think>s<answer></answer>")
    assert not prompts.format_ok("<think>a</think>s")  # truncated


def test_summary_withholds_reasoning_and_answer():
    assert prompts.summary(GOOD) == "28*2=56,59+56=115"
    text = "<think>secret 99</think> recap <answer>42</answer>"
    s = prompts.summary(text)
    assert s == "recap" and "secret" not in s and "42" not in s
    # unterminated answer block is withheld too
    assert prompts.summary("<think>t</think>recap<answer>4") == "recap"
    # reasoning never closed: nothing is public
    assert prompts.summary("<think>all private <answer>3</answer>") == ""


def test_toy_templates_are_literal():
    assert prompts.toy_plain("1+2=?") == "Q: 1+2=?\n"
    assert prompts.toy_with_attempt("1+2=?", "1+2=3") == "Q: 1+2=?\nR: 1+2=3\n"
    assert prompts.toy_with_attempt("1+2=?", "a\nb") == "Q: 1+2=?\nR: a b\n"
    fmt = prompts.PromptFormat("toy")
    problem = {"prompt": "1+2=?"}
    assert fmt.plain(problem) == "Q: 1+2=?\n"
    assert fmt.with_attempt(problem, "x") == "Q: 1+2=?\nR: x\n"
