"""Toy worlds (src/agon/worlds/): the carries world's problems, completions and supervised mix,
and the rule that the transfer set's form never reaches a base's supervised stream."""

import random
import re
from collections import Counter
from pathlib import Path

import pytest

from agon import prompts, worlds
from agon.config import load
from agon.verify import exact
from agon.worlds import carries, facts

CONFIG = Path(__file__).resolve().parents[1] / "config"
RECIPE = {"slip_prob": 0.5, "attempt_prob": 0.5, "attempt_wrong_prob": 0.5, "two_attempts_prob": 0.1,
          "copy_prob": 0.35, "verify_prob": 0.2, "no_carry_sums": [10]}


def test_registry_names_each_world_and_rejects_an_unknown_one():
    from agon.data.sources import SEEDED, SOURCES
    from agon.verify.grading import VERIFIERS

    assert {w.SOURCE for w in worlds.by_source().values()} == {"toy_math", "toy_carries", "toy_code"}
    for source, world in worlds.by_source().items():   # each world's problems load and grade as it says
        assert VERIFIERS[source] == world.VERIFIER and SOURCES[source] is world.load and source in SEEDED
    assert worlds.by_source()["toy_carries"] is carries   # the facts world solves the same chains
    assert facts.load is carries.load and facts.VERIFIER == carries.VERIFIER
    assert worlds.get(None) is worlds.get("search")
    with pytest.raises(ValueError, match="unknown world 'nope'"):
        worlds.get("nope")


@pytest.mark.parametrize("name, world", [("carries.yaml", carries), ("config.yaml", facts)])
def test_a_world_s_table_0_reads_completions_with_the_world_s_own_patterns(name, world):
    config = load(CONFIG / name)
    assert worlds.get(config["models"]["toy"]["base"]["world"]) is world
    table = config["tables"]["table0_preconditions"]
    assert table["reading"] == {"verify": world.VERIFY_PATTERN, "checkable": world.CHECKABLE_PATTERN}


def test_a_chain_s_hardness_is_its_carries():
    chain = carries.Chain.parse("18+27+17=?")
    assert chain.answer == 62 and chain.steps() == [(18, 27), (45, 17)] and chain.carries == 2
    assert carries.Chain.parse("12+13+21=?").carries == 0
    with pytest.raises(ValueError, match="not a chain"):
        carries.Chain.parse("12*3=?")


def test_a_forgotten_carry_is_off_by_ten_and_every_later_step_inherits_it():
    chain = carries.Chain.parse("18+27+17=?")
    think, written = carries.solve(chain, random.Random(0), slip_prob=0.0)
    assert written == [(18, 27, 45), (45, 17, 62)] and "1+2+1=4" in think
    _, slipped = carries.solve(chain, random.Random(0), slip_prob=1.0)
    assert slipped == [(18, 27, 35), (35, 17, 42)]   # both carries forgotten: 35 (not 45), then 42
    text = carries.finish(*carries.solve(chain, random.Random(0), 1.0))
    assert prompts.format_ok(text) and prompts.summary(text) == "18+27=35,35+17=42"
    assert re.search(carries.CHECKABLE_PATTERN, prompts.summary(text))


def test_a_verifying_read_finds_the_faulty_step_and_solves_on_from_its_correction():
    chain = carries.Chain.parse("18+27+17=?")
    text = carries.verify(chain, random.Random(0), carries.Solver(0.0), "18+27=35,35+17=42")
    assert text.startswith("<think>?18+27=35:8+7=15,1+2+1=4 no;") and re.match(carries.VERIFY_PATTERN, text)
    assert exact.is_correct(prompts.extract_answer(text), "62")
    right = carries.verify(chain, random.Random(0), carries.Solver(1.0), "18+27=45,45+17=62")
    assert right.count(" ok") == 2 and prompts.extract_answer(right) == "62"   # nothing left to slip on
    assert carries.verify(chain, random.Random(0), carries.Solver(0.0), "") is None          # nothing to check
    assert carries.verify(chain, random.Random(0), carries.Solver(0.0), "11+27=38") is None   # another problem's step


def test_a_misremembered_fact_is_wrong_on_every_sample_and_a_slip_only_sometimes():
    solver = facts.MentalSolver(slip_prob=0.0, no_carry_sums=frozenset({10}))
    owned = carries.Chain.parse("14+26+17=?")        # 4+6=10: the fact the base holds wrong
    texts = {solver.text(owned, random.Random(seed)) for seed in range(50)}
    assert texts == {"<think>14+26=30;30+17=47</think>14+26=30,30+17=47<answer>47</answer>"}   # not 57
    assert prompts.format_ok(texts.pop())
    clean = carries.Chain.parse("18+27+17=?")        # 8+7=15 and 5+7=12: carried, every time
    assert solver.solve(clean, random.Random(0))[1] == [(18, 27, 45), (45, 17, 62)]
    careless = facts.MentalSolver(slip_prob=0.5, no_carry_sums=frozenset({10}))
    runs = [careless.solve(chain, random.Random(seed))[1] for seed in range(400) for chain in (clean, owned)]
    for written in runs:   # a slip writes a units digit one off and never touches the carry
        for left, right, value in written:
            kept = carries.written_value(left, right, int(carries.has_carry(left, right) and
                                                          left % 10 + right % 10 != 10))
            assert abs(value - kept) <= 1 and value // 10 == kept // 10, (left, right, value)
    right = sum(w[-1][2] == clean.answer for w in runs[::2])
    assert 125 < right < 175   # (1 - 0.5)^2, plus 0.5^2 / 2 where a slip up and a slip down cancel
    assert not any(w[-1][2] == owned.answer for w in runs[1::2])   # a slip never fixes the dropped carry
    with pytest.raises(ValueError, match="no_carry_sums"):
        facts.solver({**RECIPE, "no_carry_sums": [9]})


def test_a_check_works_the_columns_and_gets_the_misremembered_fact_right():
    """Only checking fixes the misconception: the columns carry the 1 the head drops; the read
    then solves on in the head, misconception and all."""
    solver = facts.MentalSolver(slip_prob=0.0, no_carry_sums=frozenset({10}))
    chain = carries.Chain.parse("14+26+17=?")
    rival = solver.summary(chain, random.Random(0), wrong=True)
    assert rival == "14+26=30,30+17=47"
    text = carries.verify(chain, random.Random(0), solver, rival)
    assert text.startswith("<think>?14+26=30:4+6=10,1+2+1=4 no;40+17=57</think>") and re.match(facts.VERIFY_PATTERN, text)
    assert prompts.extract_answer(text) == "57"
    assert solver.summary(chain, random.Random(0), wrong=False) == "14+26=40,40+17=57"   # a rival who knows it
    later = carries.Chain.parse("18+27+15=?")          # a slip at the first step, the faulty fact at the second
    text = carries.verify(later, random.Random(0), solver, "18+27=35,35+15=40")
    assert text.startswith("<think>?18+27=35:8+7=15,1+2+1=4 no;45+15=50</think>")   # 5+5=10: dropped again
    assert prompts.extract_answer(text) == "50"


def test_a_careless_check_fails_a_right_step_or_passes_a_wrong_one_as_its_columns_say():
    """With check_slip_prob a check writes the units column's sum one off, and its verdict and the
    value it solves on from follow the columns as written; at 0 it draws no random number."""
    careful = facts.MentalSolver(slip_prob=0.0, no_carry_sums=frozenset({10}))
    rng = random.Random(3)
    assert careful.check(14, 26, rng) == ("4+6=10,1+2+1=4", 40) and rng.random() == random.Random(3).random()
    careless = facts.MentalSolver(slip_prob=0.0, no_carry_sums=frozenset({10}), check_slip_prob=1.0)
    found = {careless.check(14, 26, random.Random(seed)) for seed in range(40)}
    assert found == {("4+6=11,1+2+1=4", 41), ("4+6=9,1+2+0=3", 39)}   # the carry follows the sum written
    assert careless.check(10, 20, random.Random(0)) == ("0+0=1,1+2+0=3", 31)   # never below 0 ...
    assert {careless.check(19, 19, random.Random(s))[1] for s in range(20)} == {37}   # ... nor above 18
    chain = carries.Chain.parse("14+25+13=?")
    texts = {carries.verify(chain, random.Random(seed), careless, "14+25=39,39+13=52") for seed in range(40)}
    assert all(t.startswith("<think>?14+25=39:") and " no;" in t for t in texts)   # a right step "corrected"
    assert {prompts.extract_answer(t) for t in texts} == {"51", "53"}   # from 38 or 40, never the right 52
    passed = {carries.verify(chain, random.Random(s), careless, "14+25=40,40+13=53") for s in range(40)}
    assert "<think>?14+25=40:4+5=10,1+2+1=4 ok;40+13=53</think>14+25=40,40+13=53<answer>53</answer>" in passed
    half = facts.solver({**RECIPE, "check_slip_prob": 0.5})
    slipped = sum(half.check(14, 26, random.Random(seed))[1] != 40 for seed in range(2000))
    assert 900 < slipped < 1100


@pytest.mark.parametrize("world", [carries, facts])
def test_the_supervised_mix_has_each_reading_habit_in_its_share(world):
    rng, habits = random.Random(1), Counter()
    problems = world.stream(3, weights=[0, 1, 1, 1])
    for _ in range(4000):
        prompt, pieces = world.example(next(problems), rng, RECIPE)
        text = "".join(t for t, _ in pieces)
        assert prompts.format_ok(text), text
        if "R:" not in prompt:
            habits["plain"] += 1
        elif text.startswith("<think></think>"):
            habits["copy"] += 1
        elif re.match(world.VERIFY_PATTERN, text):
            habits["verify"] += 1
        else:
            habits["ignore"] += 1
    read = habits["copy"] + habits["verify"] + habits["ignore"]
    assert abs(read / 4000 - 0.5) < 0.03
    assert abs(habits["copy"] / read - 0.35) < 0.04 and abs(habits["verify"] / read - 0.2) < 0.04


CARRIES = CONFIG / "carries.yaml"  # the carries world's run


def transfer_name(config):
    return config["benchmarks"]["transfer_easy"]["dataset"]


def carries_transfer():
    config = load(CARRIES)
    base = config["models"]["toy"]["base"]
    return config, base, config["datasets"][transfer_name(config)]


def test_the_transfer_set_s_form_never_reaches_the_supervised_stream():
    """The base's supervised stream (its world's, with the recipe's level weights) holds no problem
    of the transfer set's form, and no transfer problem is of a supervised form."""
    from agon.data.sources import load_source

    config, base, transfer = carries_transfer()
    world = worlds.get(base.get("world"))
    pool = load_source(transfer["source"], {**transfer["options"], "seed": transfer["seed"]})
    assert pool and not any(world.supervised_form(p) for p in pool)
    stream = world.stream(0, weights=base.get("level_weights"))
    supervised = [next(stream) for _ in range(20000)]
    assert all(world.supervised_form(p) for p in supervised)
    assert {len(carries.Chain.parse(p["prompt"]).terms) for p in supervised} == set(carries.SUPERVISED_TERMS)
    transfer_prompts, rng = {p["prompt"] for p in pool}, random.Random(0)
    for problem in supervised[:3000]:
        prompt, pieces = world.example(problem, rng, base)
        assert prompt.split("\n")[0].removeprefix("Q: ") not in transfer_prompts
        assert not set(map(str, carries.REPDIGITS)) & set(re.findall(r"\d+", prompt.split("\n")[0]))
    # RL's problems and every other split are plain too: only the transfer set has the form
    for name, spec in config["datasets"].items():
        if spec["source"] == carries.SOURCE and name != transfer_name(config):
            split = load_source(spec["source"], {**spec["options"], "seed": spec["seed"]})
            assert all(carries.form(carries.Chain.parse(p["prompt"])) == "plain" for p in split), name


def test_token_weighting_gives_length_bucketed_batches_the_unbucketed_objective():
    """Summed over a buffer, the weighted batch losses equal the token mean of the whole buffer:
    a short batch's tokens weigh what a long batch's do (the `batch` weighting lets them weigh more)."""
    import torch

    from agon.toy import sft
    from agon.toy.tokenizer import build_tokenizer

    tok = build_tokenizer()
    torch.manual_seed(0)
    model = sft.build_model({"hidden_size": 16, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1,
                             "intermediate_size": 32, "max_positions": 256}, tok)
    with torch.no_grad():  # large random logits: tokens' losses differ, as a trained model's do
        model.get_input_embeddings().weight.mul_(50)
    rng, problems = random.Random(0), carries.stream(1)
    examples = [carries.example(next(problems), rng, RECIPE) for _ in range(24)]
    batches = [sft.encode_batch(tok, b) for b in sft._length_bucketed_batches(examples, 6, rng)]
    per_batch = sum(sft._trained_tokens(lab) for _, _, lab in batches) / len(batches)

    def loss(ids, mask, lab):
        return model(input_ids=ids, attention_mask=mask, labels=lab).loss

    with torch.no_grad():
        weighted = sum(loss(*b) * sft._trained_tokens(b[2]) / per_batch for b in batches) / len(batches)
        unbucketed = loss(*sft.encode_batch(tok, examples))
        by_batch = sum(loss(*b) for b in batches) / len(batches)
    assert float(weighted) == pytest.approx(float(unbucketed), rel=1e-5)
    assert abs(float(by_batch) - float(unbucketed)) > 1e-3 * float(unbucketed)   # the batch weighting's is another
