"""Is a sample of Omega values bimodal? (book/paper.md claim 2): three tests, their null and their family.

Sarle's coefficient ``BC = (g^2 + 1) / (k + 3 (n-1)^2 / ((n-2)(n-3)))``, Hartigan's dip test and a 1- vs
2-component Gaussian mixture (``BIC_1 - BIC_2`` and Ashman's ``D``), with ``n / deff`` tokens (Kish's design
effect ``1 + (m - 1) rho`` of tokens clustered in prompts) and Holm's step-down adjustment across depths.

Usage:

1. ``bimodality(values)``: Sarle's coefficient, Hartigan's dip test, 1- vs 2-component Gaussian mixture;
2. ``holm_adjusted(results)``: the dip's p-values Holm-adjusted across depths;
3. ``bimodality_checks(cap, layer)``: the same with massive-activation coordinates or the first position
   removed (the two confounds of chapter 3).

Introduced in: chapter 3.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidInputError
from .omega import samples

if TYPE_CHECKING:
    import pandas as pd

    from ..capturing.results import Capture

DIP_ALPHA = 0.05
BC_THRESHOLD = 5 / 9  # Sarle's coefficient of a uniform distribution
BIC_MARGIN = 10.0  # "very strong" on Kass & Raftery's (1995) scale
ASHMAN_D = 2.0  # two equal-variance Gaussians make a bimodal density iff D > 2


# --- bimodality ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bimodality:
    """Three tests of bimodality of one sample, and their combined verdict.

    Attributes
    ----------
    n : int
        Values in the sample.
    n_distinct : int
        Distinct values (ties are point masses, which the dip test rightly calls non-unimodal).
    coefficient : float
        Sarle's bimodality coefficient (``bimodality_coefficient``).
    dip : float
        Hartigan's dip statistic.
    dip_p : float
        Its p-value against the uniform (the least favourable unimodal law).
    delta_bic : float
        ``BIC(1 Gaussian) - BIC(2-component mixture)``: positive favours two.
    ashman_d : float
        Ashman's ``D``, the separation of the two fitted components.
    votes : dict of str to bool
        ``"coefficient"``, ``"dip"``, ``"mixture"``: does each test say bimodal?
    verdict : str
        ``"bimodal"`` (all three), ``"unimodal"`` (none) or ``"inconclusive"``.
    n_effective : float
        ``n`` over the design effect (``n`` when the values are treated as independent).

    Examples
    --------
    ``bimodality`` makes one; here for two well separated modes of 500 values each:

    >>> import numpy as np
    >>> from latentbook.analysis.bimodality import Bimodality, bimodality
    >>> rng = np.random.default_rng(0)
    >>> result = bimodality(np.concatenate([rng.normal(0.2, 0.02, 500), rng.normal(0.6, 0.02, 500)]))
    >>> isinstance(result, Bimodality), result.n, result.n_distinct, result.n_effective
    (True, 1000, 1000, 1000.0)
    >>> result.votes, result.verdict
    ({'coefficient': True, 'dip': True, 'mixture': True}, 'bimodal')
    """

    n: int
    n_distinct: int  # distinct values: ties (a token repeated at depth 0, where Omega depends on the token
    # alone) are point masses, which the dip test rightly calls non-unimodal
    coefficient: float  # Sarle's bimodality coefficient
    dip: float  # Hartigan's dip statistic
    dip_p: float  # its p-value against the uniform (the least favourable unimodal law)
    delta_bic: float  # BIC(1 Gaussian) - BIC(2-component mixture): > 0 favours two
    ashman_d: float  # separation of the two fitted components
    votes: dict[str, bool]  # "coefficient", "dip", "mixture": does each test say bimodal?
    verdict: str  # "bimodal" (all three), "unimodal" (none) or "inconclusive"
    n_effective: float  # n / design effect (n when tokens are treated as independent)


def bimodality_coefficient(values: np.ndarray) -> float:
    """Sarle's ``BC = (g^2 + 1) / (k + 3 (n-1)^2 / ((n-2)(n-3)))``, ``g`` skewness, ``k`` excess kurtosis.

    Both bias-corrected (``G1``, ``G2``); ``BC > 5/9`` (a uniform's value) suggests bimodality, but a strongly
    skewed unimodal law can pass it too, which is why ``bimodality`` asks two more tests.

    Parameters
    ----------
    values : numpy.ndarray
        The sample (the bias corrections need at least four values).

    Returns
    -------
    float
        ``BC``.

    Examples
    --------
    Two separated modes lie above the uniform's 5/9, a Gaussian sample near its 1/3, a large uniform sample
    within sampling error of 5/9:

    >>> import numpy as np
    >>> from latentbook.analysis.bimodality import bimodality_coefficient
    >>> rng = np.random.default_rng(0)
    >>> two = np.concatenate([rng.normal(0.2, 0.02, 500), rng.normal(0.6, 0.02, 500)])
    >>> one = rng.normal(0.2, 0.02, 1000)
    >>> round(bimodality_coefficient(two), 2), round(bimodality_coefficient(one), 2)
    (0.96, 0.35)
    >>> bool(abs(bimodality_coefficient(rng.uniform(size=100_000)) - 5 / 9) < 0.005)
    True
    """
    from scipy.stats import kurtosis, skew

    x = np.asarray(values, dtype=np.float64)
    n = len(x)
    g = skew(x, bias=False)
    k = kurtosis(x, fisher=True, bias=False)
    return float((g**2 + 1) / (k + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3))))


def dip_test(values: np.ndarray, n_effective: float | None = None) -> tuple[float, float]:
    """Hartigan & Hartigan's (1985) dip statistic and its p-value (the ``diptest`` package: a port of R's
    ``diptest``; p-value interpolated in the table of the dip of uniform samples of size ``n_effective``,
    by default the sample's size).

    Parameters
    ----------
    values : numpy.ndarray
        The sample.
    n_effective : float, optional
        The sample size the p-value is read at; None: the number of values.

    Returns
    -------
    dip : float
        The dip statistic.
    p_value : float
        Its p-value.

    Examples
    --------
    Two separated modes are rejected as unimodal, a Gaussian sample is not; read at fewer effective values, the
    same dip is less significant:

    >>> import numpy as np
    >>> from latentbook.analysis.bimodality import dip_test
    >>> rng = np.random.default_rng(0)
    >>> two = np.concatenate([rng.normal(0.2, 0.02, 500), rng.normal(0.6, 0.02, 500)])
    >>> one = rng.normal(0.2, 0.02, 1000)
    >>> dip, p = dip_test(two)
    >>> round(dip, 3), p < 0.001
    (0.192, True)
    >>> dip, p = dip_test(one)
    >>> round(dip, 3), round(p, 2), dip_test(one, n_effective=50)[1] > p
    (0.01, 0.81, True)
    """
    import diptest
    from diptest.consts import Consts

    x = np.asarray(values, dtype=np.float64)
    dip = float(diptest.dipstat(x))
    return dip, float(Consts.compute_pval_interpolation(float(n_effective or len(x)), dip))


def design_effect(values: np.ndarray, prompt_ids: np.ndarray) -> float:
    """Kish's design effect of a clustered mean, ``1 + (m - 1) rho``: ``m = sum n_g^2 / sum n_g`` (the size-
    weighted mean cluster size) and ``rho`` the intraclass correlation of the values within prompts (one-way
    ANOVA estimator, floored at 0). ``n / deff`` tokens carry the information of independent ones.

    Parameters
    ----------
    values : numpy.ndarray
        One value per token.
    prompt_ids : numpy.ndarray
        The prompt of each token.

    Returns
    -------
    float
        The design effect, at least 1 (exactly 1 with one prompt, or one token per prompt).

    Examples
    --------
    Values fixed by their prompt (intraclass correlation 1) in prompts of 4 tokens: the design effect is the
    cluster size 4; independent values give about 1:

    >>> import numpy as np
    >>> from latentbook.analysis.bimodality import design_effect
    >>> rng = np.random.default_rng(0)
    >>> prompt_ids = np.repeat(np.arange(50), 4)
    >>> round(design_effect(np.repeat(rng.standard_normal(50), 4), prompt_ids), 6)
    4.0
    >>> bool(design_effect(rng.standard_normal(200), prompt_ids) < 1.3)
    True
    >>> design_effect(rng.standard_normal(200), np.zeros(200))  # one prompt
    1.0
    """
    x = np.asarray(values, dtype=np.float64)
    _, groups = np.unique(prompt_ids, return_inverse=True)
    sizes = np.bincount(groups).astype(np.float64)
    k, n = len(sizes), len(x)
    if k < 2 or k == n:
        return 1.0
    means = np.bincount(groups, weights=x) / sizes
    between = float(np.sum(sizes * (means - x.mean()) ** 2) / (k - 1))
    within = float(np.sum((x - means[groups]) ** 2) / (n - k))
    n0 = (n - np.sum(sizes**2) / n) / (k - 1)
    rho = max(0.0, (between - within) / (between + (n0 - 1) * within)) if between + within > 0 else 0.0
    return float(1.0 + (np.sum(sizes**2) / n - 1.0) * rho)


def _mixture_log_density(x: np.ndarray, weight: np.ndarray, mu: np.ndarray, var: np.ndarray) -> np.ndarray:
    """``log sum_k w_k N(x; mu_k, var_k)`` and each component's share, for parameters of shape ``(starts, 2)``."""
    log_p = (
        np.log(weight)[:, None, :]
        - 0.5 * np.log(2 * np.pi * var)[:, None, :]
        - 0.5 * (x[None, :, None] - mu[:, None, :]) ** 2 / var[:, None, :]
    )
    top = log_p.max(-1, keepdims=True)
    log_total = top[..., 0] + np.log(np.exp(log_p - top).sum(-1))
    return log_total, np.exp(log_p[..., 0] - log_total)


def two_gaussians(
    values: np.ndarray, max_iter: int = 150, tol: float = 1e-8, bins: int = 128
) -> tuple[float, np.ndarray, np.ndarray]:
    """Maximum-likelihood mixture of two Gaussians in 1-D by EM (Dempster, Laird & Rubin 1977) from five starts
    (the sample split at its 20, 35, 50, 65 and 80 % quantiles), vectorised over the starts.

    EM runs on the sample's histogram (``bins`` equal bins, counts as weights: the cost does not grow with
    ``n``) until the mean log-likelihood gains less than ``tol`` or ``max_iter`` steps (within 1e-6 of the
    optimum on the book's samples; a BIC difference moves by ``2 n`` times that); the returned mean log-likelihood
    per value is then computed on the values themselves. Returns it, the two means and the two variances (floored at
    ``1e-6`` of the sample's).

    Parameters
    ----------
    values : numpy.ndarray
        The sample (flattened).
    max_iter : int
        The most EM steps.
    tol : float
        Stop once no start's mean log-likelihood gains more than this in a step.
    bins : int
        Bins of the histogram EM runs on.

    Returns
    -------
    log_likelihood : float
        The best start's mean log-likelihood per value.
    means : numpy.ndarray
        Its two means, shape ``(2,)``.
    variances : numpy.ndarray
        Its two variances, shape ``(2,)``.

    Examples
    --------
    Two equal modes at 0.2 and 0.6 of s.d. 0.02 are recovered, with the mean log-likelihood of the true mixture,
    ``-log(2 pi 0.02^2) / 2 - 1/2 + log(1/2) = 1.80``, up to sampling error:

    >>> import numpy as np
    >>> from latentbook.analysis.bimodality import two_gaussians
    >>> rng = np.random.default_rng(0)
    >>> log_likelihood, means, variances = two_gaussians(np.concatenate([rng.normal(0.2, 0.02, 500),
    ...                                                                  rng.normal(0.6, 0.02, 500)]))
    >>> np.sort(means).round(2).tolist(), np.sqrt(variances).round(2).tolist()
    ([0.2, 0.6], [0.02, 0.02])
    >>> bool(abs(log_likelihood - 1.80) < 0.05)
    True
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    floor = 1e-6 * x.var() + 1e-300
    counts, edges = np.histogram(x, bins=bins)
    centres = (edges[:-1] + edges[1:]) / 2
    keep = counts > 0
    c, w = centres[keep], counts[keep] / counts.sum()
    cuts = np.quantile(x, [0.2, 0.35, 0.5, 0.65, 0.8])
    resp = (c[None, :] <= cuts[:, None]).astype(np.float64)  # responsibility of component 0, (starts, bins)
    score = np.full(len(cuts), -np.inf)
    for _ in range(max_iter):
        share = np.stack([resp @ w, (1 - resp) @ w], -1) + 1e-300
        mu = np.stack([resp @ (w * c), (1 - resp) @ (w * c)], -1) / share
        var = np.maximum(np.stack([resp @ (w * c**2), (1 - resp) @ (w * c**2)], -1) / share - mu**2, floor)
        log_total, resp = _mixture_log_density(c, share, mu, var)
        new_score = log_total @ w
        if np.all(new_score - score < tol):
            break
        score = new_score
    exact = _mixture_log_density(x, share, mu, var)[0].mean(1)
    best = int(np.argmax(exact))
    return float(exact[best]), mu[best], var[best]


def mixture_comparison(values: np.ndarray, n_effective: float | None = None) -> tuple[float, float]:
    """``BIC_1 - BIC_2 = 2 n_e (l_2 - l_1) - 3 log n_e`` of one Gaussian (closed form) and two (``two_gaussians``),
    ``l`` the mean log-likelihood per token and ``n_e`` the effective sample size (by default ``n``), and
    Ashman's ``D = sqrt(2) |mu_1 - mu_2| / sqrt(s_1^2 + s_2^2)`` of the two components (the EM starts are
    deterministic: no seed).

    Parameters
    ----------
    values : numpy.ndarray
        The sample (flattened).
    n_effective : float, optional
        The effective sample size ``n_e``; None: the number of values.

    Returns
    -------
    delta_bic : float
        ``BIC_1 - BIC_2``: positive favours two components.
    ashman_d : float
        Ashman's ``D`` of the two fitted components.

    Examples
    --------
    Two separated modes: two components win by far and are well apart (``D > 2``); a Gaussian sample: one
    component wins (``BIC_1 - BIC_2 < 0``):

    >>> import numpy as np
    >>> from latentbook.analysis.bimodality import mixture_comparison
    >>> rng = np.random.default_rng(0)
    >>> two = np.concatenate([rng.normal(0.2, 0.02, 500), rng.normal(0.6, 0.02, 500)])
    >>> one = rng.normal(0.2, 0.02, 1000)
    >>> delta_bic, d = mixture_comparison(two)
    >>> delta_bic > 1000, round(d, 1)
    (True, 20.4)
    >>> delta_bic, d = mixture_comparison(one)
    >>> delta_bic < 0, d < 2
    (True, True)
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    n_e = float(n_effective or len(x))
    one = -0.5 * (np.log(2 * np.pi * x.var()) + 1.0)  # the maximum mean log-likelihood of one Gaussian
    two, mu, var = two_gaussians(x)
    delta_bic = 2 * n_e * (two - one) - 3 * np.log(n_e)
    return float(delta_bic), float(np.sqrt(2) * abs(mu[0] - mu[1]) / np.sqrt(var.sum()))


def bimodality(
    values: np.ndarray, prompt_ids: np.ndarray | None = None, dip_alpha: float = DIP_ALPHA
) -> Bimodality:
    """Is a sample of Omega values bimodal? (book/paper.md claim 2.)

    Votes: ``coefficient`` if Sarle's ``BC > 5/9``; ``dip`` if the dip test's ``p < dip_alpha`` (0.05, or a
    Holm-adjusted level across depths); ``mixture`` if two Gaussians beat one by ``BIC >= 10`` *and* are
    separated (Ashman's ``D > 2``: two equal Gaussians give a bimodal density only then; a skewed or heavy-tailed
    unimodal sample also prefers two components by BIC). With ``prompt_ids`` the dip's p-value and the BIC use
    ``n / deff`` tokens (``design_effect``): tokens of one prompt are not independent, and treating them so
    finds modes in the prompts' offsets. Verdict: "bimodal" when all three agree, "unimodal" when none does,
    else "inconclusive". Check ``n_distinct``: many ties (repeated tokens at depth 0) make the dip test reject.
    All values equal (exact one-hot tokens share one Omega): "unimodal", with NaN for the undefined statistics.
    Deterministic (the mixture's EM starts are fixed), so it takes no seed.

    Parameters
    ----------
    values : numpy.ndarray
        At least 20 finite Omega values (flattened).
    prompt_ids : numpy.ndarray, optional
        The prompt of each value, the same shape as ``values``; None treats the values as independent.
    dip_alpha : float
        The level of the dip test's vote; by default ``DIP_ALPHA`` (0.05).

    Returns
    -------
    Bimodality
        The three statistics, their votes, the verdict and the sample's ``n``, ``n_distinct`` and ``n_effective``.

    Raises
    ------
    InvalidInputError
        For fewer than 20 values, a value that is not finite, or ``prompt_ids`` of another shape.

    Examples
    --------
    Two separated modes are bimodal, a Gaussian sample unimodal, and equal values unimodal:

    >>> import numpy as np
    >>> from latentbook.analysis.bimodality import bimodality
    >>> rng = np.random.default_rng(0)
    >>> two = np.concatenate([rng.normal(0.2, 0.02, 500), rng.normal(0.6, 0.02, 500)])
    >>> one = rng.normal(0.2, 0.02, 1000)
    >>> bimodality(two).verdict, bimodality(one).verdict, bimodality(np.full(30, 0.5)).verdict
    ('bimodal', 'unimodal', 'unimodal')

    Values of 40 prompts of 25 tokens, each prompt at its own offset: as independent tokens the prompts'
    offsets look like modes to the dip test; counted by prompt (about 40 effective values) they do not:

    >>> values = np.repeat(rng.normal(0.3, 0.05, 40), 25) + rng.normal(0, 0.005, 1000)
    >>> prompt_ids = np.repeat(np.arange(40), 25)
    >>> independent, clustered = bimodality(values), bimodality(values, prompt_ids=prompt_ids)
    >>> independent.votes["dip"], clustered.votes["dip"], round(clustered.n_effective, 1)
    (True, False, 40.3)
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    if len(x) < 20 or not np.all(np.isfinite(x)):
        raise InvalidInputError(f"bimodality needs at least 20 finite values, got {len(x)}.")
    if prompt_ids is not None and np.shape(prompt_ids) != x.shape:
        raise InvalidInputError(
            f"prompt_ids needs one id per value ({len(x)}), got shape {np.shape(prompt_ids)}."
        )
    if np.ptp(x) == 0:  # a point mass has one mode: dip 0 (p = 1); the moments and mixture are undefined
        votes = dict.fromkeys(("coefficient", "dip", "mixture"), False)
        nan = float("nan")
        return Bimodality(len(x), 1, nan, 0.0, 1.0, nan, nan, votes, "unimodal", float(len(x)))
    n_e = len(x) / design_effect(x, prompt_ids) if prompt_ids is not None else float(len(x))
    coefficient = bimodality_coefficient(x)
    dip, dip_p = dip_test(x, n_e)
    delta_bic, ashman = mixture_comparison(x, n_e)
    votes = {
        "coefficient": coefficient > BC_THRESHOLD,
        "dip": dip_p < dip_alpha,
        "mixture": delta_bic >= BIC_MARGIN and ashman > ASHMAN_D,
    }
    n_votes = sum(votes.values())
    verdict = "bimodal" if n_votes == 3 else "unimodal" if n_votes == 0 else "inconclusive"
    return Bimodality(
        len(x), len(np.unique(x)), coefficient, dip, dip_p, delta_bic, ashman, votes, verdict, n_e
    )


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm's (1979) step-down adjusted p-values: ``max_{j <= i} min(1, (k - j + 1) p_(j))`` in sorted order.

    Parameters
    ----------
    p_values : numpy.ndarray
        The family's p-values, each in ``[0, 1]``.

    Returns
    -------
    numpy.ndarray
        The adjusted p-values, in the input's order.

    Raises
    ------
    InvalidInputError
        For a p-value outside ``[0, 1]`` or NaN.

    Examples
    --------
    Sorted, 0.01, 0.03 and 0.04 are multiplied by 3, 2 and 1 (0.03, 0.06, 0.04), then made non-decreasing:

    >>> import numpy as np
    >>> from latentbook.analysis.bimodality import holm
    >>> holm(np.array([0.01, 0.04, 0.03])).round(6).tolist()
    [0.03, 0.06, 0.06]
    >>> holm(np.array([0.5, 0.9])).tolist()
    [1.0, 1.0]
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.size == 0:
        return p
    if np.any(np.isnan(p)) or np.any((p < 0) | (p > 1)):
        raise InvalidInputError("p-values must lie in [0, 1] (no NaN).")
    order = np.argsort(p)
    adjusted = np.minimum(1.0, np.maximum.accumulate((len(p) - np.arange(len(p))) * p[order]))
    out = np.empty_like(adjusted)
    out[order] = adjusted
    return out


def holm_adjusted(results: list[Bimodality], alpha: float = DIP_ALPHA) -> list[Bimodality]:
    """``results`` (one per depth) with the dip's p-value Holm-adjusted across them and the dip vote and verdict
    decided at ``alpha`` on the adjusted value (a family of tests: one depth in twenty passes by chance at 0.05).

    Parameters
    ----------
    results : list of Bimodality
        One ``bimodality`` result per depth.
    alpha : float
        The family's level; by default ``DIP_ALPHA`` (0.05).

    Returns
    -------
    list of Bimodality
        The same results, in order, with ``dip_p``, the ``dip`` vote and the verdict replaced.

    Examples
    --------
    A dip test that passes at 0.05 alone (``p = 0.046``) fails in a family of three:

    >>> import numpy as np
    >>> from latentbook.analysis.bimodality import bimodality, holm_adjusted
    >>> rng = np.random.default_rng(0)
    >>> borderline = bimodality(np.repeat(rng.normal(0.3, 0.05, 40), 25) + rng.normal(0, 0.005, 1000))
    >>> family = [borderline, bimodality(rng.normal(0.2, 0.02, 500)), bimodality(rng.normal(0.2, 0.02, 500))]
    >>> round(borderline.dip_p, 3), borderline.votes["dip"]
    (0.046, True)
    >>> adjusted = holm_adjusted(family)
    >>> round(adjusted[0].dip_p, 3), adjusted[0].votes["dip"], adjusted[0].verdict
    (0.138, False, 'inconclusive')
    >>> [b.dip_p >= a.dip_p for a, b in zip(family, adjusted)]
    [True, True, True]
    """
    adjusted = holm(np.array([b.dip_p for b in results]))
    out = []
    for b, p in zip(results, adjusted):
        votes = {**b.votes, "dip": bool(p < alpha)}
        n_votes = sum(votes.values())
        verdict = "bimodal" if n_votes == 3 else "unimodal" if n_votes == 0 else "inconclusive"
        out.append(Bimodality(**{**b.__dict__, "dip_p": float(p), "votes": votes, "verdict": verdict}))
    return out


def bimodality_checks(cap: Capture, layer: int, k: int = 4) -> pd.DataFrame:
    """``bimodality`` at ``layer`` on the Omega sample as captured, then with each confound removed.

    Rows: "all tokens"; "first position removed"; "top-k dims removed" (massive-activation coordinates,
    ``samples(drop_top_dims=k)``, from the smaller vector sample); and "both removed". A bimodality that
    survives neither removal is an artefact of the attention sink or of a few huge coordinates. Each test
    counts the sample's tokens by their prompts (``bimodality(prompt_ids=)``).

    Parameters
    ----------
    cap : Capture
        The capture whose token samples are read.
    layer : int
        A depth ``l`` in ``0..L`` that ``cap`` holds; negative counts from ``L``.
    k : int
        Massive-activation coordinates to remove in the "top-k dims removed" rows.

    Returns
    -------
    pandas.DataFrame
        One row per sample (``sample``) with ``n``, ``n_distinct``, ``n_prompts``, ``mean``, ``coefficient``,
        ``dip_p``, ``delta_bic``, ``ashman_d`` and ``verdict``.

    Raises
    ------
    InvalidInputError
        For a sample with fewer than 20 tokens (``bimodality``).

    Examples
    --------
    64 prompts of 8 Gaussian tokens (``d = 32``) whose first-position tokens carry a coordinate of 100 at depth 1:
    those tokens make a second mode, which either removal takes away:

    >>> import numpy as np
    >>> from latentbook.analysis import synthetic
    >>> from latentbook.analysis.bimodality import bimodality_checks
    >>> rng = np.random.default_rng(0)
    >>> ids, positions = np.repeat(np.arange(64), 8), np.tile(np.arange(8), 64)
    >>> states = rng.standard_normal((2, 512, 32))
    >>> states[1, positions == 0, 5] = 100.0
    >>> checks = bimodality_checks(synthetic.as_capture(states, ids, positions, n_vectors=512), 1, k=1)
    >>> checks[["sample", "n", "n_prompts", "verdict"]].values.tolist()
    [['all tokens', 512, 64, 'bimodal'], ['first position removed', 448, 64, 'unimodal'],
     ['top-1 dims removed', 512, 64, 'unimodal'], ['both removed', 448, 64, 'unimodal']]
    """
    import pandas as pd

    variants = {
        "all tokens": (0, False),
        "first position removed": (0, True),
        f"top-{k} dims removed": (k, False),
        "both removed": (k, True),
    }
    rows = []
    for name, (drop_dims, drop_first) in variants.items():
        values, prompts = samples(cap, layer, drop_dims, drop_first)
        result = bimodality(values, prompt_ids=prompts)
        rows.append(
            {
                "sample": name,
                "n": result.n,
                "n_distinct": result.n_distinct,
                "n_prompts": len(np.unique(prompts)),
                "mean": float(values.mean()),
                "coefficient": result.coefficient,
                "dip_p": result.dip_p,
                "delta_bic": result.delta_bic,
                "ashman_d": result.ashman_d,
                "verdict": result.verdict,
            }
        )
    return pd.DataFrame(rows)
