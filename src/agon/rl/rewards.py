"""Rewards as pure functions of correctness c in {0, 1}, format phi in {0, 1} and lengths.

Paper (PAPER.md, Method):
  standalone / coop (Eq. 2):  2 c(b) + lambda phi(b)
  adv (Eq. 3):                2 c(b) + c(b) (1 - c(a)) + lambda phi(b)   ladder {0, 2, 3}
  margin (ablation):          3 c(b) - c(a) + lambda phi(b)
  length tie-break (Sec 5.6): + gamma c(b) c(a) 1[|b| < |a|]
where b is the rewarded rollout and a the rival draft it is compared with.
"""

from __future__ import annotations

CHALLENGER_MODES = ("coop", "adv", "margin")


def standalone(c: int, phi: int, lam: float) -> float:
    return 2.0 * c + lam * phi


def cooperative(c_b: int, phi_b: int, lam: float) -> float:
    return standalone(c_b, phi_b, lam)


def adversarial(c_b: int, c_a: int, phi_b: int, lam: float) -> float:
    """The conversion bonus: +1 only when the challenger is right where the rival was wrong."""
    return 2.0 * c_b + c_b * (1 - c_a) + lam * phi_b


def margin(c_b: int, c_a: int, phi_b: int, lam: float) -> float:
    return 3.0 * c_b - c_a + lam * phi_b


def length_tiebreak(c_b: int, c_a: int, len_b: int, len_a: int, gamma: float) -> float:
    """Both right: the shorter challenger earns gamma."""
    return gamma * c_b * c_a * (1.0 if len_b < len_a else 0.0)


def challenger(mode: str, c_b: int, c_a: int, phi_b: int, lam: float,
               gamma: float = 0.0, len_b: int = 0, len_a: int = 0) -> float:
    if mode == "coop":
        r = cooperative(c_b, phi_b, lam)
    elif mode == "adv":
        r = adversarial(c_b, c_a, phi_b, lam)
    elif mode == "margin":
        r = margin(c_b, c_a, phi_b, lam)
    else:
        raise ValueError(f"unknown challenger reward mode {mode!r}; known: {CHALLENGER_MODES}")
    if gamma:
        r += length_tiebreak(c_b, c_a, len_b, len_a, gamma)
    return r
