"""Group-relative advantages (paper Eq. 1) by explicit group ids, checked against TRL's formula."""

import numpy as np
import pytest
import torch

from agon.rl.advantages import EPS, group_advantages


def _reference(rewards, group_ids, eps=EPS):
    """Straightforward per-group (r - mean) / (unbiased std + eps) for groups with variance."""
    rewards = np.asarray(rewards, dtype=float)
    out = np.zeros_like(rewards)
    for g in set(group_ids):
        idx = [i for i, x in enumerate(group_ids) if x == g]
        r = rewards[idx]
        if len(r) > 1 and r.std() > 0:
            out[idx] = (r - r.mean()) / (r.std(ddof=1) + eps)
    return out


def test_interleaved_group_ids():
    rewards = [1.0, 10.0, 2.0, 20.0, 3.0, 30.0]
    gid = ["a", "b", "a", "b", "a", "b"]
    res = group_advantages(rewards, gid)
    np.testing.assert_allclose(res.advantages, _reference(rewards, gid), atol=1e-12)
    # the two groups are the same shape scaled by 10: same standardised values (up to eps)
    np.testing.assert_allclose(res.advantages[0::2], res.advantages[1::2], atol=1e-3)
    assert res.groups == 2 and res.dropped_groups == 0 and res.keep.all()


def test_group_order_does_not_matter():
    rng = np.random.default_rng(0)
    gid = np.repeat(np.arange(5), 4)
    rewards = rng.normal(size=20)
    base = group_advantages(rewards, gid)
    for _ in range(5):
        perm = rng.permutation(20)
        res = group_advantages(rewards[perm], gid[perm])
        np.testing.assert_allclose(res.advantages, base.advantages[perm], atol=1e-12)
        np.testing.assert_array_equal(res.keep, base.keep[perm])
        assert (res.groups, res.dropped_groups) == (base.groups, base.dropped_groups)


def test_mean_zero_unit_std_within_kept_groups():
    rng = np.random.default_rng(1)
    gid = rng.permutation(np.repeat(["p0", "p1", "p2", "p3"], 8))
    rewards = rng.integers(0, 4, size=gid.size).astype(float) + rng.normal(scale=0.1, size=gid.size)
    res = group_advantages(rewards, gid, eps=0.0)
    assert res.keep.all()
    for g in set(gid.tolist()):
        a = res.advantages[gid == g]
        assert abs(a.mean()) < 1e-12
        assert abs(a.std(ddof=1) - 1.0) < 1e-12
    # with TRL's eps the std is just under 1
    res = group_advantages(rewards, gid)
    for g in set(gid.tolist()):
        a = res.advantages[gid == g]
        assert abs(a.mean()) < 1e-12
        r = rewards[gid == g]
        assert a.std(ddof=1) == pytest.approx(r.std(ddof=1) / (r.std(ddof=1) + EPS), abs=1e-12)


def test_zero_variance_and_singleton_groups_dropped_and_counted():
    rewards = [2.0, 2.0, 2.0, 0.0, 2.0, 5.0, 1.0, 1.0]
    gid = [0, 0, 0, 1, 1, 2, 3, 3]  # 0: constant, 1: signal, 2: one rollout, 3: constant
    res = group_advantages(rewards, gid)
    assert res.groups == 4
    assert res.dropped_groups == 3
    np.testing.assert_array_equal(res.keep, [False, False, False, True, True, False, False, False])
    np.testing.assert_array_equal(res.advantages[~res.keep], 0.0)
    assert res.advantages[3] < 0 < res.advantages[4]


def test_all_dropped():
    res = group_advantages([1.0, 1.0, 0.0, 0.0], [0, 0, 1, 1])
    assert not res.keep.any() and res.dropped_groups == 2 and res.groups == 2
    np.testing.assert_array_equal(res.advantages, 0.0)


def test_length_mismatch_raises():
    with pytest.raises(ValueError):
        group_advantages([1.0, 2.0, 3.0], [0, 0])


# --- TRL's formula -------------------------------------------------------------------------------

def _trl_advantages(rewards: torch.Tensor, num_generations: int) -> torch.Tensor:
    """TRL 1.16.0 trl/trainer/grpo_trainer.py, _generate_and_score_completions, lines 2765-2787
    (multi_objective_aggregation="sum_then_normalize", scale_rewards="group"), with TRL's own nanstd
    (trl/trainer/utils.py line 1021)."""
    from trl.trainer.utils import nanstd

    mean_grouped_rewards = torch.nanmean(rewards.view(-1, num_generations), dim=1)
    mean_grouped_rewards = mean_grouped_rewards.repeat_interleave(num_generations, dim=0)
    std_rewards = nanstd(rewards.view(-1, num_generations), dim=1)
    std_rewards = std_rewards.repeat_interleave(num_generations, dim=0)
    advantages = rewards - mean_grouped_rewards
    advantages = advantages / (std_rewards + 1e-4)
    return advantages


@pytest.mark.parametrize("num_generations", [2, 4, 8, 16])
def test_matches_trl_on_contiguous_groups(num_generations):
    rng = np.random.default_rng(num_generations)
    n_groups = 6
    # binary-ish rewards like ours (2c + 0.5 phi) plus a continuous batch
    for rewards in (2.0 * rng.integers(0, 2, size=n_groups * num_generations)
                    + 0.5 * rng.integers(0, 2, size=n_groups * num_generations),
                    rng.normal(size=n_groups * num_generations)):
        gid = np.repeat(np.arange(n_groups), num_generations)
        ours = group_advantages(rewards, gid)
        trl = _trl_advantages(torch.tensor(rewards, dtype=torch.float64), num_generations).numpy()
        # TRL keeps zero-variance groups (their advantages are exactly 0); we drop them with advantage 0.
        # Tolerance: TRL's nanstd computes Bessel's correction count / (count - 1) as an int/int torch
        # division, i.e. in float32 even for float64 rewards (relative error ~3e-8 in the variance);
        # ours is exact, so the two agree to ~1e-8, not to float64 precision.
        np.testing.assert_allclose(ours.advantages, trl, rtol=0, atol=1e-7)
        for g in range(n_groups):
            r = rewards[gid == g]
            assert ours.keep[gid == g].all() == (not np.allclose(r, r[0]))


def test_matches_trl_in_float32():
    rng = np.random.default_rng(7)
    rewards = rng.integers(0, 4, size=32).astype(np.float32)
    ours = group_advantages(rewards, np.repeat(np.arange(4), 8))
    trl = _trl_advantages(torch.tensor(rewards), 8).numpy()
    np.testing.assert_allclose(ours.advantages, trl, rtol=0, atol=1e-5)
