"""Self-checks of lab 3, Marchenko–Pastur spectra (``notebooks/lab3_spectra.ipynb``).

One ``check_<exercise>(your_function)`` per exercise, compared with the reference: the tested functions of
``latentbook.analysis.mp_law`` and ``latentbook.analysis.ranks``, and the plain count above the edge for
``count_spikes``. Null model: ``N`` i.i.d. tokens ``h ~ N(0, sigma2 I_d)``, ``q = d / N``; the covariance
eigenvalues fill ``[sigma2 (1 - sqrt q)^2, sigma2 (1 + sqrt q)^2]`` (book/paper.md, "Spectral density").
Introduced in: lab 3 (chapter 4 of the book).
"""

from __future__ import annotations

import numpy as np

from ..analysis import mp_law, ranks, synthetic
from .checking import Case, Result, run, seeded


def check_mp_edges(mp_edges) -> Result:
    """``mp_edges(q, sigma2)`` -> ``(lambda_minus, lambda_plus)``."""
    cases = []
    for q, sigma2 in ((0.25, 1.0), (2.0, 0.5), (1.0, 3.0)):
        cases.append(
            Case(
                f"mp_edges(q={q}, sigma2={sigma2})",
                lambda q=q, sigma2=sigma2: tuple(mp_edges(q, sigma2)),
                mp_law.mp_edges(q, sigma2),
                mistakes=[
                    (
                        (sigma2 * (1 - q) ** 2, sigma2 * (1 + q) ** 2),
                        "The edges use sqrt(q): (1 -+ sqrt(q))^2.",
                    ),
                    (((1 - np.sqrt(q)) ** 2, (1 + np.sqrt(q)) ** 2), "Scale both edges by sigma2."),
                ],
                hint="lambda_pm = sigma2 (1 pm sqrt(q))^2.",
            )
        )
    return run("mp_edges", cases)


def check_mp_density(mp_density) -> Result:
    """``mp_density(x, q, sigma2)``: the continuous part of the MP law, 0 outside the edges."""
    cases = []
    for q, sigma2 in ((0.25, 1.0), (0.5, 2.0), (2.0, 1.0)):
        lo, hi = mp_law.mp_edges(q, sigma2)
        x = np.linspace(0.0, 1.2 * hi, 25)
        inside = (x > lo) & (x < hi) & (x > 0)
        no_q = np.where(
            inside,
            np.sqrt(np.clip((hi - x) * (x - lo), 0, None)) / (2 * np.pi * sigma2 * np.where(inside, x, 1)),
            0,
        )
        cases.append(
            Case(
                f"mp_density on 25 points of [0, 1.2 lambda_+], q={q}, sigma2={sigma2}",
                lambda x=x, q=q, sigma2=sigma2: mp_density(x, q, sigma2),
                mp_law.mp_density(x, q, sigma2),
                mistakes=[(no_q, "The denominator is 2 pi sigma2 q x: q is missing.")],
                hint="rho(x) = sqrt((lambda_+ - x)(x - lambda_-)) / (2 pi sigma2 q x) inside the edges, 0 outside.",
            )
        )
    return run("mp_density", cases)


def check_count_spikes(count_spikes) -> Result:
    """``count_spikes(eigvals, n_samples, sigma2)``: eigenvalues above the MP upper edge ``lambda_+``."""
    cases = []
    for n, d, planted, seed in ((2000, 100, [12.0, 6.0, 4.0], 1), (1000, 200, [30.0], 2), (3000, 60, [], 3)):
        if planted:
            x = synthetic.spiked_covariance(n, d, planted, seed=seed).x
        else:
            x = synthetic.gaussian(n, d, seed=seed)
        lam = np.linalg.eigvalsh(np.cov(x, rowvar=False))[::-1]
        upper = mp_law.mp_edges(d / n, 1.0)[1]
        wrong_q = (1 + np.sqrt(n / d)) ** 2
        cases.append(
            Case(
                f"count_spikes of N={n} tokens in d={d} with {len(planted)} planted spikes",
                lambda lam=lam, n=n: count_spikes(lam, n, 1.0),
                np.int64(np.sum(lam > upper)),
                mistakes=[
                    (np.int64(np.sum(lam > wrong_q)), "The ratio is q = d / N (dimension over samples).")
                ],
                hint="Count the eigenvalues above sigma2 (1 + sqrt(d / N))^2, d = len(eigvals).",
            )
        )
    return run("count_spikes", cases)


def _spectra_cases(name: str, fn, reference, seed: int, mistakes_of) -> list[Case]:
    rng = seeded(seed)
    cases = []
    for what, lam in (
        ("an isotropic spectrum of 50 ones", np.ones(50)),
        ("one direction only", np.r_[5.0, np.zeros(9)]),
        ("a random spectrum of 40 eigenvalues", np.sort(rng.exponential(size=40))[::-1]),
    ):
        cases.append(
            Case(
                f"{name} of {what}",
                lambda lam=lam: fn(lam),
                np.float64(reference(lam)),
                mistakes=mistakes_of(lam),
            )
        )
    return cases


def check_participation_ratio(participation_ratio) -> Result:
    """``participation_ratio(eigvals)``: ``(sum lambda)^2 / sum lambda^2``."""
    return run(
        "participation_ratio",
        _spectra_cases(
            "participation_ratio",
            participation_ratio,
            ranks.participation_ratio,
            4,
            lambda lam: [
                (
                    np.sum(lam**2) / np.sum(lam) ** 2,
                    "Upside down: (sum lambda)^2 / sum lambda^2 (d when isotropic).",
                )
            ],
        ),
    )


def check_effective_rank(effective_rank) -> Result:
    """``effective_rank(eigvals)``: ``exp(-sum p log p)`` with ``p = lambda / sum lambda`` (0 log 0 = 0)."""

    def entropy(lam):
        p = lam[lam > 0] / lam.sum()
        return -np.sum(p * np.log(p))

    return run(
        "effective_rank",
        _spectra_cases(
            "effective_rank",
            effective_rank,
            ranks.effective_rank,
            5,
            lambda lam: [(entropy(lam), "That is the entropy: the effective rank is its exponential.")],
        ),
    )
