"""Self-checks of lab 1, attention thermodynamics (``notebooks/lab1_thermodynamics.ipynb``).

One ``check_<exercise>(your_function)`` per exercise: it calls your function on fixed cases and compares
with the reference, the tested functions of ``latentbook.analysis.thermo``. Free energy of an attention row
(book/paper.md, "Attention thermodynamics"): ``F(p) = sum_j p_j E_j + (1/beta) sum_j p_j log p_j``, minimised by
``softmax(-beta E)`` at ``F_min = -(1/beta) log sum_j exp(-beta E_j)``.
Introduced in: lab 1 (chapter 2 of the book).
"""

from __future__ import annotations

import numpy as np
import torch
from scipy import special

from ..analysis import thermo
from ..capturing.attention import AttentionStats
from .checking import Case, Result, run, seeded


def _rows(seed: int, n: int = 5, k: int = 6) -> tuple[np.ndarray, np.ndarray]:
    rng = seeded(seed)
    return rng.dirichlet(np.ones(k), size=n), rng.normal(size=(n, k))


def check_free_energy(free_energy) -> Result:
    """``free_energy(p, energies, beta)``: rows along the last axis, ``0 log 0 = 0``."""
    p, e = _rows(1)
    energy, plogp = (p * e).sum(-1), special.xlogy(p, p).sum(-1)
    hint = "F(p) = sum_j p_j E_j + (1/beta) sum_j p_j log p_j, summed along the last axis."
    one_hot = np.eye(6)[[2]]
    return run(
        "free_energy",
        [
            Case(
                "free_energy(p, E, beta=1.0) on 5 rows of 6 keys",
                lambda: free_energy(p, e, 1.0),
                thermo.free_energy(p, e, 1.0),
                mistakes=[
                    (energy, "You have only the energy term: add (1/beta) sum_j p_j log p_j."),
                    (
                        energy - plogp,
                        "Sign of the entropy term: F adds (1/beta) sum p log p (which is -H/beta).",
                    ),
                ],
                hint=hint,
            ),
            Case(
                "free_energy(p, E, beta=4.0)",
                lambda: free_energy(p, e, 4.0),
                thermo.free_energy(p, e, 4.0),
                mistakes=[(energy + 4.0 * plogp, "The entropy term is divided by beta, not multiplied.")],
                hint=hint,
            ),
            Case(
                "free_energy of a one-hot row (it has zeros: 0 log 0 = 0)",
                lambda: free_energy(one_hot, e[:1], 2.0),
                np.array([e[0, 2]]),
                hint="Zeros in p: use scipy.special.xlogy(p, p), which is 0 where p = 0.",
            ),
            Case(
                "free_energy of one row given as a 1-d array",
                lambda: free_energy(p[0], e[0], 1.0),
                thermo.free_energy(p[0], e[0], 1.0),
                hint="Sum along axis=-1 so that one row gives a number and a batch of rows an array.",
            ),
        ],
    )


def check_gibbs(gibbs) -> Result:
    """``gibbs(energies, beta)``: ``softmax(-beta E)`` along the last axis, stable for large energies."""
    _, e = _rows(2)
    return run(
        "gibbs",
        [
            Case(
                "gibbs(E, beta=1.0) on 5 rows",
                lambda: gibbs(e, 1.0),
                thermo.gibbs(e, 1.0),
                mistakes=[
                    (
                        special.softmax(e, -1),
                        "Low energy gets the most weight: softmax(-beta E), not softmax(beta E).",
                    ),
                ],
                hint="p_j = exp(-beta E_j) / sum_k exp(-beta E_k).",
            ),
            Case(
                "gibbs(E, beta=3.0)",
                lambda: gibbs(e, 3.0),
                thermo.gibbs(e, 3.0),
                mistakes=[(special.softmax(-e, -1), "Multiply the energies by beta before the softmax.")],
            ),
            Case(
                "gibbs(1000 E, beta=1.0): large energies",
                lambda: gibbs(1000 * e, 1.0),
                thermo.gibbs(1000 * e, 1.0),
                hint="Subtract the row's smallest beta E before exp (or use scipy.special.softmax) to avoid overflow.",
            ),
        ],
    )


def check_f_min(f_min) -> Result:
    """``f_min(energies, beta)``: ``-(1/beta) log sum_j exp(-beta E_j)``, stable, equal to ``F`` at Gibbs."""
    _, e = _rows(3)
    lse = special.logsumexp(-2.0 * e, axis=-1)
    return run(
        "f_min",
        [
            Case(
                "f_min(E, beta=1.0) against free_energy(gibbs(E), E)",
                lambda: f_min(e, 1.0),
                thermo.free_energy(thermo.gibbs(e, 1.0), e, 1.0),
                mistakes=[(special.logsumexp(-e, axis=-1), "F_min has a minus sign: -(1/beta) log Z.")],
                hint="F_min = -(1/beta) log sum_j exp(-beta E_j).",
            ),
            Case(
                "f_min(E, beta=2.0)",
                lambda: f_min(e, 2.0),
                thermo.f_min(e, 2.0),
                mistakes=[(-lse, "Divide log Z by beta: F_min = -(1/beta) log Z.")],
            ),
            Case(
                "f_min(1000 E, beta=1.0): large energies",
                lambda: f_min(1000 * e, 1.0),
                thermo.f_min(1000 * e, 1.0),
                hint="exp overflows: use scipy.special.logsumexp.",
            ),
        ],
    )


def _attention(entropy: np.ndarray, log_keys: np.ndarray, rows: np.ndarray) -> AttentionStats:
    """Attention statistics whose per-head means are ``entropy`` and ``log_keys`` (``(L, H)`` arrays)."""
    stats = AttentionStats(*entropy.shape)
    n = torch.as_tensor(rows, dtype=torch.float64)
    stats.sums["rows"] += n
    stats.sums["entropy"] += n * torch.as_tensor(entropy)
    stats.sums["log_keys"] += n * torch.as_tensor(log_keys)
    return stats


def check_normalized_entropy(normalized_entropy) -> Result:
    """``normalized_entropy(attention)``: per layer, the mean over heads of ``H / log(n_keys)``."""
    rng = seeded(4)
    log_keys = rng.uniform(2.0, 4.0, size=(4, 3))
    entropy = log_keys * rng.uniform(0.1, 0.9, size=(4, 3))
    stats = _attention(entropy, log_keys, rng.integers(10, 100, size=(4, 3)))
    return run(
        "normalized_entropy",
        [
            Case(
                "normalized_entropy(stats) for 4 layers of 3 heads",
                lambda: normalized_entropy(stats),
                thermo.cooling(stats)["normalized_entropy"].to_numpy(),
                mistakes=[
                    (
                        entropy.mean(1) / log_keys.mean(1),
                        "Divide head by head (entropy / log_keys), then average over heads.",
                    ),
                    (entropy.mean(1), "Normalise each head's entropy by its log(n_keys)."),
                ],
                hint="stats.entropy() and stats.log_keys() are (layers, heads) arrays.",
            ),
        ],
    )
