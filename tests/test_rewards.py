"""The reward algebra of PAPER.md (Method), pinned value by value.

standalone / coop (Eq. 2): 2 c(b) + lam phi(b)
adv (Eq. 3):               2 c(b) + c(b) (1 - c(a)) + lam phi(b)   ladder {0, 2, 3}
margin (ablation):         3 c(b) - c(a) (+ format)
length tie-break (5.6):    + gamma c(b) c(a) 1[|b| < |a|]
"""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agon.rl import rewards
from agon.rl.advantages import group_advantages

C = (0, 1)
LAM = 0.5


# --- the ladder and the closed forms -----------------------------------------------------------

def test_adversarial_ladder_before_format_is_0_2_3():
    table = {(c_b, c_a): rewards.adversarial(c_b, c_a, 0, LAM) for c_b in C for c_a in C}
    assert table == {(0, 0): 0.0, (0, 1): 0.0, (1, 1): 2.0, (1, 0): 3.0}
    assert set(table.values()) == {0.0, 2.0, 3.0}
    # the same through the dispatcher
    for (c_b, c_a), r in table.items():
        assert rewards.challenger("adv", c_b, c_a, 0, LAM) == r


@pytest.mark.parametrize("c_b,c_a,phi", list(itertools.product(C, C, C)))
@pytest.mark.parametrize("lam", [0.0, 0.5, 1.3])
def test_closed_forms(c_b, c_a, phi, lam):
    assert rewards.standalone(c_b, phi, lam) == 2 * c_b + lam * phi
    assert rewards.cooperative(c_b, phi, lam) == 2 * c_b + lam * phi
    assert rewards.adversarial(c_b, c_a, phi, lam) == 2 * c_b + c_b * (1 - c_a) + lam * phi
    assert rewards.margin(c_b, c_a, phi, lam) == 3 * c_b - c_a + lam * phi
    # coop ignores the rival entirely
    assert rewards.challenger("coop", c_b, c_a, phi, lam) == 2 * c_b + lam * phi
    assert rewards.challenger("adv", c_b, c_a, phi, lam) == 2 * c_b + c_b * (1 - c_a) + lam * phi
    assert rewards.challenger("margin", c_b, c_a, phi, lam) == 3 * c_b - c_a + lam * phi
    # adv and coop differ exactly by the conversion bonus
    assert (rewards.challenger("adv", c_b, c_a, phi, lam)
            - rewards.challenger("coop", c_b, c_a, phi, lam)) == c_b * (1 - c_a)


def test_margin_values():
    assert rewards.margin(1, 0, 0, LAM) == 3.0
    assert rewards.margin(1, 1, 0, LAM) == 2.0
    assert rewards.margin(0, 0, 0, LAM) == 0.0
    assert rewards.margin(0, 1, 0, LAM) == -1.0
    assert rewards.margin(1, 0, 1, LAM) == 3.5


def test_format_weight_is_a_quarter_of_correctness():
    correctness = rewards.standalone(1, 0, LAM) - rewards.standalone(0, 0, LAM)
    fmt = rewards.standalone(0, 1, LAM) - rewards.standalone(0, 0, LAM)
    assert correctness == 2.0 and fmt == 0.5
    assert fmt / correctness == 0.25
    # the same format weight in every challenger mode
    for mode in rewards.CHALLENGER_MODES:
        for c_b, c_a in itertools.product(C, C):
            assert (rewards.challenger(mode, c_b, c_a, 1, LAM)
                    - rewards.challenger(mode, c_b, c_a, 0, LAM)) == 0.5


# --- length tie-break -----------------------------------------------------------------------

@pytest.mark.parametrize("mode", rewards.CHALLENGER_MODES)
@pytest.mark.parametrize("c_b,c_a", list(itertools.product(C, C)))
@pytest.mark.parametrize("len_b,len_a", [(5, 9), (9, 9), (12, 9)])
def test_length_tiebreak_only_both_right_and_strictly_shorter(mode, c_b, c_a, len_b, len_a):
    gamma = 0.5
    base = rewards.challenger(mode, c_b, c_a, 1, LAM)
    with_tb = rewards.challenger(mode, c_b, c_a, 1, LAM, gamma=gamma, len_b=len_b, len_a=len_a)
    bonus = gamma if (c_b == 1 and c_a == 1 and len_b < len_a) else 0.0
    assert with_tb - base == bonus
    assert rewards.length_tiebreak(c_b, c_a, len_b, len_a, gamma) == bonus


def test_length_tiebreak_off_by_default():
    # gamma defaults to 0: lengths are ignored
    assert rewards.challenger("adv", 1, 1, 0, LAM, len_b=1, len_a=100) == 2.0
    assert rewards.challenger("adv", 1, 1, 0, LAM, gamma=0.0, len_b=1, len_a=100) == 2.0


def test_unknown_mode_raises_naming_it():
    with pytest.raises(ValueError, match="bogus_mode"):
        rewards.challenger("bogus_mode", 1, 0, 1, LAM)


# --- shared rival == vanilla GRPO by construction ------------------------------------------------

def _adv(mode, c_b, c_a, phi, lam=LAM):
    return [rewards.challenger(mode, b, a, f, lam) for b, a, f in zip(c_b, c_a, phi)]


@settings(max_examples=300, deadline=None)
@given(groups=st.lists(st.tuples(st.integers(2, 12).flatmap(
           lambda n: st.lists(st.integers(0, 1), min_size=n, max_size=n)),
           st.integers(0, 1), st.integers(0, 1)), min_size=1, max_size=5),
       mode=st.sampled_from(["adv", "margin"]))
def test_group_constant_rival_gives_coop_advantages(groups, mode):
    """A rival shared by the whole group makes adv (and margin) affine in c_b: same advantages as coop."""
    c_b, c_a, phi, gid = [], [], [], []
    for g, (cbs, ca, ph) in enumerate(groups):
        c_b += cbs
        c_a += [ca] * len(cbs)  # group-constant rival
        phi += [ph] * len(cbs)  # group-constant format
        gid += [g] * len(cbs)
    coop_r = _adv("coop", c_b, c_a, phi)
    other_r = _adv(mode, c_b, c_a, phi)
    # eps = 0: std normalisation removes the rescaling exactly
    coop0 = group_advantages(coop_r, gid, eps=0.0)
    other0 = group_advantages(other_r, gid, eps=0.0)
    np.testing.assert_array_equal(coop0.keep, other0.keep)
    assert coop0.dropped_groups == other0.dropped_groups
    np.testing.assert_allclose(other0.advantages, coop0.advantages, rtol=0, atol=1e-12)
    # default eps = 1e-4 (TRL's): equal up to the eps/std perturbation
    coop = group_advantages(coop_r, gid)
    other = group_advantages(other_r, gid)
    np.testing.assert_array_equal(coop.keep, other.keep)
    np.testing.assert_allclose(other.advantages, coop.advantages, rtol=0, atol=1e-3)


def test_group_constant_rival_random_vectors():
    rng = np.random.default_rng(0)
    N = 8
    for trial in range(200):
        c_b = rng.integers(0, 2, size=N).tolist()
        c_a = [int(rng.integers(0, 2))] * N
        phi = [1] * N
        gid = [0] * N
        a = group_advantages(_adv("adv", c_b, c_a, phi), gid, eps=0.0)
        b = group_advantages(_adv("coop", c_b, c_a, phi), gid, eps=0.0)
        np.testing.assert_array_equal(a.keep, b.keep)
        np.testing.assert_allclose(a.advantages, b.advantages, atol=1e-12)
        # a rival that was right (c_a = 1): adv is coop identically, even with eps
        if c_a[0] == 1:
            assert _adv("adv", c_b, c_a, phi) == _adv("coop", c_b, c_a, phi)


def test_per_rollout_rival_changes_advantages_example():
    c_b = [1, 1, 0, 0]
    c_a = [0, 1, 0, 1]
    phi = [1, 1, 1, 1]
    adv = group_advantages(_adv("adv", c_b, c_a, phi), [0] * 4)
    coop = group_advantages(_adv("coop", c_b, c_a, phi), [0] * 4)
    assert adv.keep.all() and coop.keep.all()
    # the conversion (c_b=1 where c_a=0) gets more credit than the agreement under adv only
    assert adv.advantages[0] > adv.advantages[1]
    assert coop.advantages[0] == coop.advantages[1]
    assert not np.allclose(adv.advantages, coop.advantages)


@settings(max_examples=300, deadline=None)
@given(pairs=st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1)), min_size=2, max_size=12))
def test_per_rollout_rival_differs_iff_rival_varies_among_correct(pairs):
    """Exact characterisation: adv advantages == coop advantages iff c_a is constant over rollouts with c_b = 1."""
    c_b = [b for b, _ in pairs]
    c_a = [a for _, a in pairs]
    phi = [0] * len(pairs)
    gid = [0] * len(pairs)
    adv = group_advantages(_adv("adv", c_b, c_a, phi), gid, eps=0.0)
    coop = group_advantages(_adv("coop", c_b, c_a, phi), gid, eps=0.0)
    rivals_of_correct = {a for b, a in pairs if b == 1}
    same = (adv.keep.tolist() == coop.keep.tolist()
            and np.allclose(adv.advantages, coop.advantages, rtol=0, atol=1e-12))
    assert same == (len(rivals_of_correct) <= 1)


def test_per_rollout_rival_generally_differs_random():
    rng = np.random.default_rng(1)
    N, differ, trials = 8, 0, 200
    for _ in range(trials):
        c_b = rng.integers(0, 2, size=N).tolist()
        c_a = rng.integers(0, 2, size=N).tolist()
        phi = [1] * N
        a = group_advantages(_adv("adv", c_b, c_a, phi), [0] * N)
        b = group_advantages(_adv("coop", c_b, c_a, phi), [0] * N)
        differ += not (a.keep.tolist() == b.keep.tolist() and np.allclose(a.advantages, b.advantages, atol=1e-3))
    assert differ > trials // 2


@settings(max_examples=300, deadline=None)
@given(groups=st.lists(st.tuples(st.integers(2, 10).flatmap(
           lambda n: st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1)), min_size=n, max_size=n)),
           st.integers(0, 1)), min_size=1, max_size=5),
       lam=st.sampled_from([0.25, 0.5, 1.0]))
def test_shared_rival_with_a_varying_format_is_coop_only_where_the_rival_is_right(groups, lam):
    """With the format term varying inside a group, the shared rival is not inert: a right rival
    gives coop's rewards; a wrong one gives 1.5 x coop's reward with the format weight cut to 2/3,
    so its advantages are coop's at lambda' = 2 lambda / 3, and differ from coop's at lambda
    exactly when the group's correctness and format both vary (and not in lockstep)."""
    from agon.rl.methods import shared_rival_gap

    c_b, c_a, phi, gid = [], [], [], []
    for g, (rollouts, ca) in enumerate(groups):
        c_b += [c for c, _ in rollouts]
        phi += [f for _, f in rollouts]
        c_a += [ca] * len(rollouts)
        gid += [g] * len(rollouts)
    adv = group_advantages(_adv("adv", c_b, c_a, phi, lam), gid, eps=0.0)
    coop = group_advantages(_adv("coop", c_b, c_a, phi, lam), gid, eps=0.0)
    coop_cut = group_advantages(_adv("coop", c_b, c_a, phi, 2 * lam / 3), gid, eps=0.0)
    unlike = 0
    for g, (rollouts, ca) in enumerate(groups):
        idx = [i for i, x in enumerate(gid) if x == g]
        twin = coop if ca == 1 else coop_cut
        np.testing.assert_allclose(adv.advantages[idx], twin.advantages[idx], rtol=0, atol=1e-9)
        pairs = {(c, f) for c, f in rollouts}
        cs, fs = {c for c, _ in pairs}, {f for _, f in pairs}
        # coop's advantages are a function of 2c + lam f, ours of 3c + lam f: equal up to scale
        # only if the group's reward levels are collinear in both weightings
        differs = not np.allclose(adv.advantages[idx], coop.advantages[idx], atol=1e-9)
        if ca == 1 or len(cs) == 1 or len(fs) == 1 or pairs in ({(0, 0), (1, 1)}, {(0, 1), (1, 0)}):
            assert not differs, (rollouts, ca)
        else:
            assert differs, (rollouts, ca)
        unlike += differs
    measured = shared_rival_gap(_adv("adv", c_b, c_a, phi, lam), _adv("coop", c_b, c_a, phi, lam), gid)
    assert measured["groups_unlike_coop"] == unlike
