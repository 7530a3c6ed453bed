"""What each method samples and rewards in one optimizer step, with a fake StepContext.

The fake mirrors trainer.StepContext (adapters, method, lam, step, sample, grade, plain_prompt,
attempt_prompt, summary) but needs no model: completions are deterministic strings whose
correctness, format and length are read back from the text by `grade`.
"""

from dataclasses import dataclass

import pytest

from agon import prompts
from agon.rl import methods, rewards

LAM = 0.5


@dataclass
class FakeCompletion:
    prompt: str
    text: str
    prompt_ids: list
    completion_ids: list
    truncated: bool

    @property
    def length(self):
        return len(self.completion_ids)


class FakeContext:
    """Drafts: correct iff (problem + rollout index) % 3 == 0, unless `draft_correct` overrides.
    Challenger rollouts: correct iff the rollout index is even, unless `chall_correct` overrides.
    Each completion hides a unique secret in its reasoning block and its answer in the answer block."""

    def __init__(self, method, step=0, adapters=("A", "B"), draft_correct=None, chall_correct=None,
                 lengths=None):
        self.method, self.step, self.adapters, self.lam = method, step, adapters, LAM
        self.draft_correct, self.chall_correct, self.lengths = draft_correct, chall_correct, lengths or {}
        self.reading_pattern = None  # the world's mark of a read that checks the rival's steps
        self.calls = []  # (adapter, tag, prompts)
        self.produced = {}  # tag -> completions

    # -- prompts (mirror prompts.PromptFormat "toy") --
    def plain_prompt(self, problem):
        return f"Q[{problem['id']}]: {problem['prompt']}\n"

    def attempt_prompt(self, problem, attempt):
        return f"Q[{problem['id']}]: {problem['prompt']}\nR: {attempt}\n"

    @staticmethod
    def summary(text):
        return prompts.summary(text)

    # -- sampling: rollout i of this call, for the problem named in the prompt --
    def sample(self, adapter, prompt_texts, tag):
        self.calls.append((adapter, tag, list(prompt_texts)))
        out = []
        for i, p in enumerate(prompt_texts):
            pid = p[p.index("[") + 1:p.index("]")]
            k = int(pid[1:])
            if tag == "challenger":
                ok = (i % 2 == 0) if self.chall_correct is None else self.chall_correct[i]
            else:
                ok = ((k + i) % 3 == 0) if self.draft_correct is None else self.draft_correct[i]
            answer = f"ans{pid}" if ok else f"wrong{tag}{i}"
            text = (f"<think>SECRET-{tag}-{i}-{adapter}</think> recap {tag} {i} by {adapter} "
                    f"<answer>{answer}</answer>")
            n = self.lengths.get((tag, i), 10 + i)
            out.append(FakeCompletion(p, text, [ord(ch) % 97 for ch in p], list(range(n)), False))
        self.produced[tag] = out
        return out

    def grade(self, problem, completion):
        c = int(prompts.extract_answer(completion.text) == f"ans{problem['id']}")
        return c, int(prompts.format_ok(completion.text))


def _problems(n=3):
    return [{"id": f"p{k}", "prompt": f"what is {k}+{k}?"} for k in range(n)]


def _assert_blocks(group_ids, N, n_problems):
    """Rollouts come in contiguous blocks of N per problem of the batch; one group id per block,
    distinct across blocks (the id's value is not pinned, only the grouping)."""
    assert len(group_ids) == N * n_problems
    blocks = [group_ids[k * N:(k + 1) * N] for k in range(n_problems)]
    assert all(len(set(b)) == 1 for b in blocks)
    assert len({b[0] for b in blocks}) == n_problems
    assert all(group_ids.count(b[0]) == N for b in blocks)


def _pair(N=4, mode="adv", exchange="visible", roles="rotate", gamma=0.0):
    return {"kind": "pair", "group_size": N, "mode": mode, "exchange": exchange, "roles": roles, "gamma": gamma}


def _run(method, step=0, problems=None, **kw):
    adapters = methods.adapters_for(method)
    ctx = FakeContext(method, step=step, adapters=adapters, **kw)
    streams = methods.kind_of(method["kind"]).step(ctx, problems or _problems())
    return ctx, streams


# --- roles ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("step", range(6))
def test_rotation_parity(step):
    ctx, (drafter, challenger) = _run(_pair(roles="rotate"), step=step)
    expect = ("A", "B") if step % 2 == 0 else ("B", "A")
    assert (drafter.adapter, challenger.adapter) == expect
    assert (drafter.role, challenger.role) == ("drafter", "challenger")
    assert [(a, t) for a, t, _ in ctx.calls] == [(expect[0], "drafter"), (expect[1], "challenger")]


@pytest.mark.parametrize("step", range(4))
def test_fixed_roles_keep_A_drafting(step):
    ctx, (drafter, challenger) = _run(_pair(roles="fixed"), step=step)
    assert (drafter.adapter, challenger.adapter) == ("A", "B")


@pytest.mark.parametrize("step", range(4))
def test_self_refine_uses_one_adapter(step):
    method = _pair(roles="self")
    assert methods.adapters_for(method) == ("A",)
    ctx, (drafter, challenger) = _run(method, step=step)
    assert drafter.adapter == challenger.adapter == "A"
    assert {a for a, _, _ in ctx.calls} == {"A"}


def test_roles_unknown_scheme_raises():
    with pytest.raises(ValueError, match="sideways"):
        methods.roles(0, "sideways", ("A", "B"))


def test_adapters_for():
    assert methods.adapters_for({"kind": "grpo", "group_size": 16}) == ("A",)
    assert methods.adapters_for(_pair(roles="rotate")) == ("A", "B")
    assert methods.adapters_for(_pair(roles="fixed")) == ("A", "B")
    assert methods.adapters_for(_pair(roles="self")) == ("A",)


# --- what each role gets to read -----------------------------------------------------------------

@pytest.mark.parametrize("exchange", ["visible", "hidden", "shared"])
def test_drafter_prompts_are_plain(exchange):
    probs = _problems()
    ctx, _ = _run(_pair(exchange=exchange), problems=probs)
    _, tag, drafter_prompts = ctx.calls[0]
    assert tag == "drafter"
    expanded = [p for p in probs for _ in range(4)]
    assert drafter_prompts == [ctx.plain_prompt(p) for p in expanded]
    assert not any("R:" in p or "SECRET" in p or "recap" in p for p in drafter_prompts)


@pytest.mark.parametrize("roles", ["rotate", "fixed", "self"])
def test_visible_challenger_reads_summary_only(roles):
    probs = _problems()
    ctx, _ = _run(_pair(exchange="visible", roles=roles), problems=probs)
    drafts = ctx.produced["drafter"]
    _, tag, chall_prompts = ctx.calls[1]
    assert tag == "challenger" and len(chall_prompts) == len(drafts)
    expanded = [p for p in probs for _ in range(4)]
    for i, (prompt, d, p) in enumerate(zip(chall_prompts, drafts, expanded)):
        s = prompts.summary(d.text)
        assert s and s in prompt  # the rollout's OWN draft summary
        assert prompt == ctx.attempt_prompt(p, s)
        think = d.text[d.text.index("<think>") + 7:d.text.index("</think>")]
        answer = prompts.extract_answer(d.text)
        assert think not in prompt and "SECRET" not in prompt and "<think>" not in prompt
        assert answer not in prompt and "<answer>" not in prompt
        # no other draft leaks in
        for j, other in enumerate(drafts):
            if j != i:
                assert prompts.summary(other.text) not in prompt


@pytest.mark.parametrize("exchange", ["hidden", "shared"])
def test_hidden_and_shared_show_no_attempt(exchange):
    probs = _problems()
    ctx, _ = _run(_pair(exchange=exchange), problems=probs)
    _, _, chall_prompts = ctx.calls[1]
    expanded = [p for p in probs for _ in range(4)]
    assert chall_prompts == [ctx.plain_prompt(p) for p in expanded]
    assert not any("R:" in p or "recap" in p or "SECRET" in p for p in chall_prompts)


def test_unknown_exchange_raises():
    with pytest.raises(ValueError, match="whisper"):
        _run(_pair(exchange="whisper"))


# --- groups, rivals and rewards ------------------------------------------------------------------

@pytest.mark.parametrize("exchange", ["visible", "hidden", "shared"])
def test_group_ids_per_problem_N_each(exchange):
    N, probs = 4, _problems(3)
    ctx, streams = _run(_pair(N=N, exchange=exchange), problems=probs)
    for s in streams:
        assert len(s.completions) == len(s.rewards) == len(s.correct) == len(s.group_ids) == 3 * N
        _assert_blocks(s.group_ids, N, len(probs))
    assert streams[0].group_ids == streams[1].group_ids


def _expected_rival(exchange, i, N):
    return i - i % N if exchange == "shared" else i


@pytest.mark.parametrize("exchange", ["visible", "hidden", "shared"])
@pytest.mark.parametrize("mode", ["coop", "adv", "margin"])
def test_challenger_reward_uses_the_right_rival(exchange, mode):
    N = 4
    # drafts: per problem, the first draft right and the rest varied, so the shared rival differs
    # from the per-rollout rivals
    draft_correct = [1, 0, 1, 0, 1, 1, 0, 0, 1, 0, 0, 1]
    chall_correct = [1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 1]
    ctx, (drafter, challenger) = _run(_pair(N=N, mode=mode, exchange=exchange),
                                      draft_correct=draft_correct, chall_correct=chall_correct)
    assert drafter.correct == draft_correct and challenger.correct == chall_correct
    # the drafter stream is plain GRPO: standalone reward, no rival term
    assert drafter.rewards == [rewards.standalone(c, 1, LAM) for c in draft_correct]
    for i, (c_b, r) in enumerate(zip(chall_correct, challenger.rewards)):
        a = _expected_rival(exchange, i, N)
        assert r == rewards.challenger(mode, c_b, draft_correct[a], 1, LAM)
    if mode == "adv":
        # spot checks that pin the indexing: rollouts 1 and 9 are right; their own drafts (1, 9) were
        # wrong, but the first drafts of their problems (0, 8) were right
        if exchange == "shared":
            assert (challenger.rewards[0], challenger.rewards[1], challenger.rewards[9]) == (2.5, 2.5, 2.5)
        else:
            assert (challenger.rewards[0], challenger.rewards[1], challenger.rewards[9]) == (2.5, 3.5, 3.5)


def test_shared_rival_is_first_draft_of_each_problem():
    N = 4
    draft_correct = [0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1]
    chall_correct = [1] * 12
    ctx, (_, challenger) = _run(_pair(N=N, mode="adv", exchange="shared"),
                                draft_correct=draft_correct, chall_correct=chall_correct)
    # p0: first draft wrong -> every rollout converts; p1: first right -> none; p2: first wrong -> all
    assert challenger.rewards == [3.5] * 4 + [2.5] * 4 + [3.5] * 4
    _, (_, hidden) = _run(_pair(N=N, mode="adv", exchange="hidden"),
                                   draft_correct=draft_correct, chall_correct=chall_correct)
    assert hidden.rewards == [3.5 if c == 0 else 2.5 for c in draft_correct]


def test_length_tiebreak_compares_with_the_rivals_length():
    N = 2
    lengths = {("drafter", 0): 20, ("drafter", 1): 5, ("challenger", 0): 10, ("challenger", 1): 10}
    ctx, (_, ch) = _run(_pair(N=N, mode="adv", exchange="visible", gamma=0.5), problems=_problems(1),
                        draft_correct=[1, 1], chall_correct=[1, 1], lengths=lengths)
    assert ch.rewards == [2.5 + 0.5, 2.5]  # only rollout 0 is shorter than its own draft
    ctx, (_, ch) = _run(_pair(N=N, mode="adv", exchange="shared", gamma=0.5), problems=_problems(1),
                        draft_correct=[1, 1], chall_correct=[1, 1], lengths=lengths)
    assert ch.rewards == [3.0, 3.0]  # both shorter than the shared rival (draft 0, length 20)


def test_conversion_rate():
    N = 4
    draft_correct = [0, 0, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1]  # rivals 0, 1, 4, 6 wrong
    chall_correct = [1, 0, 1, 1, 1, 1, 0, 0, 1, 0, 1, 1]  # right at 0 and 4 of those (and at 2, 3: no conversion)
    for exchange in ("visible", "hidden"):
        _, (_, ch) = _run(_pair(N=N, exchange=exchange), draft_correct=draft_correct, chall_correct=chall_correct)
        assert ch.info["conversion_rate"] == pytest.approx(2 / 4)
    # shared: rivals are drafts 0, 4, 8 -> wrong, wrong, right: rollouts 0..7 face a wrong rival,
    # and 0, 2, 3, 4, 5 of them are right
    _, (_, ch) = _run(_pair(N=N, exchange="shared"), draft_correct=draft_correct, chall_correct=chall_correct)
    assert ch.info["conversion_rate"] == pytest.approx(5 / 8)
    # no wrong rival at all: undefined, reported as None
    _, (_, ch) = _run(_pair(N=N), draft_correct=[1] * 12, chall_correct=chall_correct)
    assert ch.info["conversion_rate"] is None


def test_the_share_of_reads_that_check_the_draft_is_logged_where_the_world_marks_them():
    method = _pair(N=4)
    ctx = FakeContext(method)
    ctx.reading_pattern = r"^<think>SECRET-challenger-\d*[02468]-"   # the even rollouts "check"
    _, ch = methods.pair(ctx, _problems(3))
    assert ch.info["verifying_share"] == pytest.approx(0.5)
    _, (_, ch) = _run(method)                                       # no pattern: no metric
    assert "verifying_share" not in ch.info
    ctx = FakeContext(_pair(N=4, exchange="hidden"))
    ctx.reading_pattern = r"SECRET"
    assert "verifying_share" not in methods.pair(ctx, _problems(3))[1].info   # nothing read: nothing checked


# --- grpo ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("G", [2, 5, 16])
def test_grpo_samples_G_per_problem(G):
    probs = _problems(3)
    ctx, streams = _run({"kind": "grpo", "group_size": G}, problems=probs)
    assert len(streams) == 1
    (s,) = streams
    assert s.adapter == "A" and s.role == "policy"
    assert [(a, t) for a, t, _ in ctx.calls] == [("A", "policy")]
    expanded = [p for p in probs for _ in range(G)]
    assert ctx.calls[0][2] == [ctx.plain_prompt(p) for p in expanded]
    _assert_blocks(s.group_ids, G, len(probs))
    assert len(s.completions) == len(s.rewards) == len(s.correct) == 3 * G
    assert s.rewards == [rewards.standalone(c, 1, LAM) for c in s.correct]


def test_compute_parity_grpo_2N_vs_pair_N_plus_N():
    N, probs = 8, _problems(2)
    _, (g,) = _run({"kind": "grpo", "group_size": 2 * N}, problems=probs)
    _, streams = _run(_pair(N=N), problems=probs)
    assert len(g.completions) == sum(len(s.completions) for s in streams) == 2 * N * len(probs)


# --- the same checks through the real trainer.StepContext ------------------------------------------

def test_pair_through_real_step_context():
    """Real StepContext, toy PromptFormat and Grader; only the generation backend is scripted."""
    from agon.generate import Completion
    from agon.rl import trainer
    from agon.verify.grading import Grader

    calls = []

    class ScriptedBackend:
        """Answers by adapter: B right on even slots, A on every third."""

        def sample(self, adapter, prompt_texts, sampling, seed):
            calls.append((adapter, list(prompt_texts), seed))
            out = []
            for i, p in enumerate(prompt_texts):
                right = (i % 2 == 0) if adapter == "B" else (i % 3 == 0)
                ans = "4" if right else "5"
                text = f"<think>private{adapter}{i}</think>2+2={ans}<answer>{ans}</answer>"
                out.append(Completion(p, text, [1, 2], list(range(3 + i)), False))
            return out

    probs = [{"id": f"t{k}", "prompt": "2+2=?", "answer": "4", "source": "toy_math"} for k in range(2)]
    N = 3
    method = _pair(N=N, mode="adv", exchange="visible", roles="rotate")
    ctx = trainer.StepContext(None, ScriptedBackend(), prompts.PromptFormat("toy"), Grader(), method,
                              {"temperature": 1.0}, LAM, 0, 7, ("A", "B"))
    drafter, challenger = methods.pair(ctx, probs)
    assert [c[0] for c in calls] == ["A", "B"]
    assert calls[0][2] != calls[1][2]  # drafter and challenger draws are seeded apart
    assert calls[0][1] == [prompts.toy_plain("2+2=?")] * (N * 2)
    for d, p in zip(drafter.completions, calls[1][1]):
        assert p == prompts.toy_with_attempt("2+2=?", prompts.summary(d.text))
        assert "private" not in p and "<answer>" not in p
    assert drafter.correct == [1, 0, 0, 1, 0, 0]
    assert challenger.correct == [1, 0, 1, 0, 1, 0]
    assert challenger.rewards == [rewards.adversarial(b, a, 1, LAM)
                                  for b, a in zip(challenger.correct, drafter.correct)]
    assert drafter.group_ids == challenger.group_ids
    _assert_blocks(drafter.group_ids, N, 2)


# --- a problem drawn twice in one step forms two groups, not one merged group -------------------------------

@pytest.mark.parametrize("kind", ["pair", "grpo"])
def test_every_step_batch_gets_one_group_per_slot(kind):
    from agon.rl.schedule import epoch_order

    N, per_step = 4, 2
    probs = _problems(3)
    method = _pair(N=N, exchange="shared") if kind == "pair" else {"kind": "grpo", "group_size": N}
    merged = 0
    for seed in range(20):
        order = epoch_order(probs, seed, epochs=2)
        for start in range(0, len(order), per_step):
            batch = order[start:start + per_step]
            _, streams = _run(method, problems=batch)
            for s in streams:
                merged += len(set(s.group_ids)) != len(batch)
    assert merged == 0
