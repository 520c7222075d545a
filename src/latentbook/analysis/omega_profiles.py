"""The order parameter ``m(gamma)``: mean Omega over tokens at each depth, with a prompt-bootstrap interval, and
the profiles read beside it.

``m(gamma) = mean_t Omega(h_t(gamma))`` (``omega.omega``; book/paper.md, "Order parameter"), its interval a
percentile bootstrap that resamples whole prompts, stretched by Student's ``t_{G-1} / z``.

Usage:

1. ``profile(cap)``: ``m(gamma)`` with bootstrap intervals over prompts (or tokens), a ``Profile``;
2. ``null_profiles(cap)``: ``m`` of the vector sample beside its coordinate-permutation and Gaussian nulls, and
   its excess over the Gaussian value split into scale, sparsity and structure;
3. ``standardised_profile(cap)``: ``m_z(gamma)`` after ``standardisation.robust_standardise`` (the verdict's);
   ``excess_profile(cap)``: ``m - m_perm``; ``distributions(cap)``: the density of Omega at every depth.

Introduced in: chapter 3.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidInputError
from .omega import gaussian_null, gaussian_omega, omega, permutation_null, samples
from .resampling import cluster_weights, percentile_interval
from .standardisation import robust_standardise, standardise

if TYPE_CHECKING:
    import pandas as pd

    from ..capturing.results import Capture


# --- the profile m(gamma) -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Profile:
    """``m(gamma)`` with a bootstrap interval ``[low, high]`` at each depth.

    Attributes
    ----------
    gamma : numpy.ndarray
        The depth fraction of each depth, shape ``(n_depths,)``.
    m : numpy.ndarray
        The order parameter at each depth, shape ``(n_depths,)``.
    low, high : numpy.ndarray
        The ends of the bootstrap interval at each depth, shape ``(n_depths,)``.
    n_tokens : int
        Tokens in the sample the interval comes from.
    n_prompts : int or None
        Prompts resampled (``by="prompt"``), else None.
    by : str
        What the bootstrap resampled: ``"prompt"`` or ``"token"``.
    level : float
        The coverage of the interval.
    draws : numpy.ndarray or None
        The bootstrap draws of ``m``, shape ``(n_boot, n_depths)``.

    Examples
    --------
    ``profile`` makes one; here from the Omega values of 400 tokens at two depths, resampled by token:

    >>> import numpy as np
    >>> from latentbook.analysis.omega_profiles import Profile, profile
    >>> rng = np.random.default_rng(0)
    >>> result = profile(np.stack([rng.normal(0.2, 0.02, 400), rng.normal(0.5, 0.05, 400)]), n_boot=200)
    >>> isinstance(result, Profile), result.by, result.n_tokens, result.n_prompts, result.draws.shape
    (True, 'token', 400, None, (200, 2))
    >>> result.to_frame().columns.tolist(), [round(float(m), 2) for m in result.m]
    (['gamma', 'm', 'low', 'high'], [0.2, 0.5])
    """

    gamma: np.ndarray
    m: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n_tokens: int  # tokens in the sample the interval comes from
    n_prompts: int | None  # prompts resampled (by="prompt"), else None
    by: str
    level: float
    draws: np.ndarray | None = field(default=None, repr=False)  # (n_boot, n_depths) bootstrap draws of m

    def to_frame(self) -> pd.DataFrame:
        """The profile as a table.

        Returns
        -------
        pandas.DataFrame
            One row per depth, with the columns ``gamma``, ``m``, ``low`` and ``high``.

        Examples
        --------
        >>> import numpy as np
        >>> from latentbook.analysis.omega_profiles import profile
        >>> values = np.random.default_rng(0).normal(0.3, 0.02, (3, 100))
        >>> frame = profile(values, n_boot=200).to_frame()
        >>> frame.shape, frame["gamma"].tolist()
        ((3, 4), [0.0, 0.5, 1.0])
        >>> bool(((frame["low"] < frame["m"]) & (frame["m"] < frame["high"])).all())
        True
        """
        import pandas as pd

        return pd.DataFrame({"gamma": self.gamma, "m": self.m, "low": self.low, "high": self.high})


def profile(
    data: Capture | np.ndarray,
    prompt_ids: np.ndarray | None = None,
    gamma: np.ndarray | None = None,
    by: str | None = None,
    n_boot: int = 1000,  # pragma: no mutate: default draws
    level: float = 0.95,
    seed: int = 0,  # pragma: no mutate: default seed
    drop_top_dims: int = 0,
    drop_first: bool = False,
    bounds: tuple[float, float] = (0.0, 1.0),
) -> Profile:
    """The order parameter ``m(gamma)`` = mean Omega over tokens, with a percentile bootstrap interval.

    ``data``: a ``Capture``, or per-token Omega values of shape ``(n_depths, n_tokens)`` (the same tokens at
    every depth) with ``prompt_ids`` (one per token) to resample by prompt. ``by="prompt"`` (the default when
    prompt ids are known) resamples whole prompts, since tokens of one prompt are correlated; ``by="token"``
    resamples tokens as if independent (narrower, optimistic). Draws are paired across depths. The interval's
    arms are stretched by Student's ``t_{G-1} / z`` (``G`` prompts or tokens resampled), the usual correction of
    the percentile bootstrap's narrowness with few clusters; the interval is then clipped to ``bounds``, the
    range of the values (Omega's ``[0, 1]``; with two or three prompts the stretch can reach below 0).

    For a capture, ``m`` is the exact mean over all captured tokens (``cap.omega_mean()``) and the interval is
    the bootstrap spread of the token sample's mean around it (conservative: the sample is smaller than all
    tokens). With ``drop_top_dims`` or ``drop_first`` (see ``samples``) ``m`` is the sample's own mean.

    Parameters
    ----------
    data : Capture or numpy.ndarray
        A capture, or per-token Omega values of shape ``(n_depths, n_tokens)`` with ``n_tokens >= 2``.
    prompt_ids : numpy.ndarray, optional
        For an array: the prompt of each token, shape ``(n_tokens,)``; a capture supplies its own.
    gamma : numpy.ndarray, optional
        For an array: the depth fraction of each row; None spaces them evenly over ``[0, 1]``. A capture supplies
        ``cap.gamma``.
    by : {"prompt", "token"}, optional
        What the bootstrap resamples; None: ``"prompt"`` when prompt ids are known, else ``"token"``.
    n_boot : int
        Bootstrap draws, at least 100.
    level : float
        Coverage of the interval, in ``(0.5, 1)``.
    seed : int
        Seed of the bootstrap.
    drop_top_dims : int
        For a capture only: drop this many massive coordinates first (``samples``); 0 keeps them.
    drop_first : bool
        For a capture only: remove the tokens at position 0 first.
    bounds : tuple of float
        The range the interval is clipped to; ``(0, 1)`` (Omega's) by default.

    Returns
    -------
    Profile
        ``gamma``, ``m`` and the interval ``low``, ``high`` per depth, the tokens and prompts resampled, ``by``,
        ``level`` and the bootstrap draws of ``m`` (``Profile.to_frame`` gives the first four as a table).

    Raises
    ------
    InvalidInputError
        For values of the wrong shape, a ``gamma`` without one value per depth, an unknown ``by``, ``by="prompt"``
        without prompt ids or with one prompt only, ``level`` or ``n_boot`` out of range, or ``drop_top_dims`` or
        ``drop_first`` with an array.

    Examples
    --------
    Omega values of 40 prompts of 10 tokens at two depths, each prompt shifting its tokens: the interval holds
    ``m``, and resampling prompts gives a wider interval than pretending the tokens independent:

    >>> import numpy as np
    >>> from latentbook.analysis.omega_profiles import profile
    >>> rng = np.random.default_rng(0)
    >>> ids = np.repeat(np.arange(40), 10)
    >>> offsets = np.repeat(rng.normal(0.0, 0.05, 40), 10)
    >>> values = np.stack([0.3 + offsets + rng.normal(0, 0.01, 400), 0.6 + offsets + rng.normal(0, 0.01, 400)])
    >>> by_prompt = profile(values, prompt_ids=ids, n_boot=200)
    >>> by_prompt.gamma, bool(np.all((by_prompt.low < by_prompt.m) & (by_prompt.m < by_prompt.high)))
    (array([0., 1.]), True)
    >>> bool(np.allclose(by_prompt.m, values.mean(1)))
    True
    >>> by_token = profile(values, by="token", n_boot=200)
    >>> by_prompt.by, by_prompt.n_prompts, by_token.by, by_token.n_prompts
    ('prompt', 40, 'token', None)
    >>> bool(np.all(by_token.high - by_token.low < (by_prompt.high - by_prompt.low) / 2))
    True
    """
    exact = None
    if hasattr(data, "omega_samples"):
        cap = data
        per_depth = [samples(cap, int(layer), drop_top_dims, drop_first) for layer in cap.depths]
        values = np.stack([v for v, _ in per_depth])
        prompt_ids = per_depth[0][1]
        gamma = cap.gamma
        if not drop_top_dims and not drop_first:
            exact = cap.omega_mean()
    else:
        if drop_top_dims or drop_first:
            raise InvalidInputError("drop_top_dims and drop_first need a Capture; filter arrays yourself.")
        values = np.asarray(data, dtype=np.float64)
        if values.ndim != 2 or values.shape[1] < 2:
            raise InvalidInputError(
                f"Expected Omega values of shape (n_depths, n_tokens), got {values.shape}."
            )
        if gamma is None:
            gamma = np.linspace(0.0, 1.0, values.shape[0])
    gamma = np.asarray(gamma, dtype=np.float64)
    if gamma.shape != (values.shape[0],):
        raise InvalidInputError(
            f"gamma needs one value per depth ({values.shape[0]}), got shape {gamma.shape}."
        )
    by = by or ("prompt" if prompt_ids is not None else "token")
    if by not in ("prompt", "token"):
        raise InvalidInputError(f"by must be 'prompt' or 'token', got {by!r}.")
    if not 0.5 < level < 1 or n_boot < 100:
        raise InvalidInputError(f"Need 0.5 < level < 1 and n_boot >= 100, got {level!r} and {n_boot!r}.")

    rng = np.random.default_rng(seed)
    n = values.shape[1]
    if by == "prompt":
        if prompt_ids is None or np.shape(prompt_ids) != (n,):
            raise InvalidInputError("by='prompt' needs prompt_ids, one per token (or pass by='token').")
        _, groups = np.unique(prompt_ids, return_inverse=True)
        n_groups = int(groups.max()) + 1
        if n_groups < 2:
            raise InvalidInputError("All tokens come from one prompt: resampling prompts is impossible.")
        sums = np.zeros((values.shape[0], n_groups))
        np.add.at(sums.T, groups, values.T)
        counts = np.bincount(groups, minlength=n_groups).astype(np.float64)
        weights = cluster_weights(rng, n_groups, n_boot)
        draws = (weights @ sums.T) / (weights @ counts)[:, None]
    else:
        n_groups = None
        weights = cluster_weights(rng, n, n_boot)  # each token its own cluster
        draws = weights @ values.T / n
    from scipy.stats import norm, t

    sample_mean = values.mean(1)
    low, high = percentile_interval(draws, level, axis=0)
    stretch = t.ppf((1 + level) / 2, (n_groups or n) - 1) / norm.ppf((1 + level) / 2)
    m = sample_mean if exact is None else exact
    low, high = m - stretch * (sample_mean - low), m + stretch * (high - sample_mean)
    low, high = np.clip(low, *bounds), np.clip(high, *bounds)  # the stretch must not leave the values' range
    return Profile(gamma, m, low, high, n, n_groups, by, level, m + (draws - sample_mean))


def null_profiles(cap: Capture, seed: int = 0, drop_first: bool = False) -> pd.DataFrame:
    """Mean Omega per depth of the vector sample, of its coordinate permutation and of its moment-matched Gaussian.

    Columns ``gamma``, ``sample``, ``permutation``, ``gaussian`` and ``share_permutation`` (how much of the
    sample's excess over the Gaussian value the permutation null reproduces: ``(perm - g) / (sample - g)``,
    ``g`` the exact Gaussian Omega at this width), and the decomposition of ``sample - g`` into three parts:
    ``scale = sample - standardised`` (unequal coordinate scales: massive and rogue coordinates, shared
    offsets), ``sparsity = standardised_permutation - g`` (heavy tails within coordinates: what token-specific
    sparse codes are made of, which the permutation keeps) and ``structure = standardised -
    standardised_permutation`` (which coordinates are large together within a token), with ``standardised``
    the Omega of ``standardise(x)`` and ``standardised_permutation`` that of its coordinate permutation.

    Parameters
    ----------
    cap : Capture
        The capture whose vector sample (``cap.token_vectors``) is read at every depth it holds.
    seed : int
        Seed of the permutations and Gaussian draws (offset by the depth index at each depth).
    drop_first : bool
        Remove the tokens at position 0 first.

    Returns
    -------
    pandas.DataFrame
        One row per depth with the columns above.

    Examples
    --------
    Gaussian tokens at depth 0 and Gaussian tokens with coordinate scales from 0.1 to 10 at depth 1: the unequal
    scales raise the sample's Omega, the permutation null reproduces all of it, and the decomposition puts it
    in ``scale``, none in ``structure``:

    >>> import numpy as np
    >>> from latentbook.analysis import synthetic
    >>> from latentbook.analysis.omega_profiles import null_profiles
    >>> rng = np.random.default_rng(0)
    >>> ids, positions = np.repeat(np.arange(32), 8), np.tile(np.arange(8), 32)
    >>> states = rng.standard_normal((2, 256, 32))
    >>> states[1] *= np.linspace(0.1, 10, 32)
    >>> frame = null_profiles(synthetic.as_capture(states, ids, positions, n_vectors=256))
    >>> frame["gamma"].tolist(), [round(float(v), 3) for v in frame["sample"]]
    ([0.0, 1.0], [0.193, 0.294])
    >>> [round(float(v), 2) for v in frame["scale"]]
    [0.0, 0.1]
    >>> bool(np.allclose(frame["permutation"], frame["sample"], atol=0.01))
    True
    >>> bool(np.allclose(frame["structure"], 0.0, atol=0.01)), bool(np.allclose(frame["sparsity"], 0.0, atol=0.01))
    (True, True)
    """
    import pandas as pd

    keep = cap.vectors.positions > 0 if drop_first else np.ones(len(cap.vectors.positions), dtype=bool)
    rows = []
    g = gaussian_omega(cap.d_model)
    for index, layer in enumerate(cap.depths.tolist()):  # the depths held (all of them, unless asked for)
        x = cap.token_vectors(layer).astype(np.float64)[keep]
        sample = float(omega(x).mean())
        perm = float(permutation_null(x, seed + layer).mean())
        z = standardise(x)
        standardised, standardised_perm = (
            float(omega(z).mean()),
            float(permutation_null(z, seed + layer).mean()),
        )
        rows.append(
            {
                "gamma": float(cap.gamma[index]),
                "sample": sample,
                "permutation": perm,
                "gaussian": float(gaussian_null(x, seed + layer).mean()),
                "share_permutation": (perm - g) / (sample - g) if abs(sample - g) > 1e-3 else np.nan,
                "standardised": standardised,
                "standardised_permutation": standardised_perm,
                "scale": sample - standardised,
                "sparsity": standardised_perm - g,
                "structure": standardised - standardised_perm,
            }
        )
    return pd.DataFrame(rows)


def _vector_values(
    cap: Capture, drop_first: bool, drop_top_dims: int, per_depth
) -> tuple[np.ndarray, np.ndarray]:
    """``per_depth(x, layer)`` of the vector sample at every depth (first position and top dims removed as in
    ``samples``), stacked ``(n_depths, n_tokens)``, and the prompt of each token."""
    keep = cap.vectors.positions > 0 if drop_first else np.ones(len(cap.vectors.positions), dtype=bool)
    values = []
    for layer in cap.depths.tolist():
        x = cap.token_vectors(layer).astype(np.float64)[keep]
        if drop_top_dims:
            x = np.delete(x, np.argsort(cap.abs_max(layer), kind="stable")[::-1][:drop_top_dims], axis=-1)
        values.append(per_depth(x, layer))
    return np.stack(values), cap.vectors.prompt_ids[keep]


def standardised_profile(
    cap: Capture,
    n_boot: int = 1000,
    seed: int = 0,
    drop_first: bool = False,
    drop_top_dims: int = 0,
    level: float = 0.95,
) -> Profile:
    """``m_z(gamma)``: mean Omega of the vector sample after ``robust_standardise`` at each depth, with the prompt
    bootstrap of ``profile``; ``drop_first`` and ``drop_top_dims`` remove the confounds first, as in ``samples``.

    The profile the verdict's Omega rows are judged on (chapter 8): free of shared coordinate scales, so a
    massive or rogue coordinate leaves it at the Gaussian value while sparse codes, specific to a token or
    written by a class of tokens, raise it (the median and MAD: ``standardise``'s SD squeezes class codes).

    Parameters
    ----------
    cap : Capture
        The capture whose vector sample is read at every depth it holds.
    n_boot : int
        Bootstrap draws (``profile``'s).
    seed : int
        Seed of the bootstrap.
    drop_first : bool
        Remove the tokens at position 0 first.
    drop_top_dims : int
        Drop this many coordinates of largest ``max |h_i|`` first (0: none).
    level : float
        Coverage of the interval.

    Returns
    -------
    Profile
        ``m_z(gamma)`` with its prompt-bootstrap interval.

    Examples
    --------
    Gaussian tokens whose coordinate scales run from 0.1 to 10 at depth 1: ``m`` rises there, ``m_z`` stays at the
    Gaussian value:

    >>> import numpy as np
    >>> from latentbook.analysis import synthetic
    >>> from latentbook.analysis.omega import gaussian_omega
    >>> from latentbook.analysis.omega_profiles import profile, standardised_profile
    >>> rng = np.random.default_rng(0)
    >>> ids, positions = np.repeat(np.arange(32), 8), np.tile(np.arange(8), 32)
    >>> states = rng.standard_normal((2, 256, 32))
    >>> states[1] *= np.linspace(0.1, 10, 32)
    >>> cap = synthetic.as_capture(states, ids, positions, n_vectors=256)
    >>> [round(float(m), 3) for m in profile(cap, n_boot=200).m]
    [0.193, 0.294]
    >>> m_z = standardised_profile(cap, n_boot=200)
    >>> m_z.by, m_z.n_prompts, bool(np.allclose(m_z.m, gaussian_omega(32), atol=0.01))
    ('prompt', 32, True)
    """
    values, ids = _vector_values(cap, drop_first, drop_top_dims, lambda x, _: omega(robust_standardise(x)))
    return profile(values, prompt_ids=ids, gamma=cap.gamma, n_boot=n_boot, seed=seed, level=level)


def excess_profile(
    cap: Capture,
    n_boot: int = 1000,  # pragma: no mutate: default draws
    seed: int = 0,
    drop_first: bool = False,
    drop_top_dims: int = 0,
    level: float = 0.95,
) -> Profile:
    """``m(gamma) - m_perm(gamma)``: Omega's excess over the coordinate-permutation null, on the vector sample.

    Per token ``Omega(h_t) - Omega(h~_t)`` (``h~`` the permuted sample, ``permutation_null``), averaged per depth,
    with the prompt bootstrap of ``profile``: what of ``m`` needs structure within tokens. ``drop_first`` and
    ``drop_top_dims`` remove the confounds first, as in ``samples``.

    Parameters
    ----------
    cap : Capture
        The capture whose vector sample is read at every depth it holds.
    n_boot : int
        Bootstrap draws (``profile``'s).
    seed : int
        Seed of the bootstrap and of the permutations (offset by the depth index at each depth).
    drop_first : bool
        Remove the tokens at position 0 first.
    drop_top_dims : int
        Drop this many coordinates of largest ``max |h_i|`` first (0: none).
    level : float
        Coverage of the interval.

    Returns
    -------
    Profile
        The excess per depth with its prompt-bootstrap interval, clipped to ``[-1, 1]``.

    Examples
    --------
    Gaussian tokens at depth 0 have no excess; one-hot tokens at depth 1 (along random axes) have a large one,
    since their Omega needs the structure within each token:

    >>> import numpy as np
    >>> from latentbook.analysis import synthetic
    >>> from latentbook.analysis.omega_profiles import excess_profile
    >>> rng = np.random.default_rng(0)
    >>> ids, positions = np.repeat(np.arange(32), 8), np.tile(np.arange(8), 32)
    >>> states = rng.standard_normal((2, 256, 32))
    >>> states[1] = np.eye(32)[rng.integers(0, 32, 256)]
    >>> excess = excess_profile(synthetic.as_capture(states, ids, positions, n_vectors=256), n_boot=200)
    >>> bool(excess.low[0] < 0 < excess.high[0]), bool(excess.low[1] > 0.2)
    (True, True)
    """
    values, ids = _vector_values(
        cap, drop_first, drop_top_dims, lambda x, layer: omega(x) - permutation_null(x, seed + layer)
    )
    return profile(
        values, prompt_ids=ids, gamma=cap.gamma, n_boot=n_boot, seed=seed, level=level, bounds=(-1.0, 1.0)
    )


def distributions(cap: Capture) -> tuple[np.ndarray, np.ndarray]:
    """Bin edges and the density of per-token Omega at every depth, shape ``(n_depths, bins)`` (all tokens).

    Parameters
    ----------
    cap : Capture
        The capture whose per-depth Omega histograms (``cap.omega_histogram``) are read.

    Returns
    -------
    edges : numpy.ndarray
        The histogram's bin edges, shape ``(bins + 1,)`` (the same at every depth).
    density : numpy.ndarray
        The density in each bin at each depth, shape ``(n_depths, bins)``; each row integrates to 1 (to 0 for a
        depth without tokens).

    Examples
    --------
    At depth 0 Gaussian tokens, at depth 1 one-hot tokens (``d = 16``), whose Omega is ``1 - 1/4``:

    >>> import numpy as np
    >>> from latentbook.analysis import synthetic
    >>> from latentbook.analysis.omega_profiles import distributions
    >>> rng = np.random.default_rng(0)
    >>> states = np.stack([rng.standard_normal((200, 16)), np.eye(16)[rng.integers(0, 16, 200)]])
    >>> edges, density = distributions(synthetic.as_capture(states))
    >>> edges.shape, density.shape, bool(np.allclose((density * np.diff(edges)).sum(1), 1.0))
    ((201,), (2, 200), True)
    >>> float(edges[np.argmax(density[1])]) <= 0.75 < float(edges[np.argmax(density[1]) + 1])
    True
    """
    edges = cap.omega_histogram(int(cap.depths[0]))[0]
    counts = np.stack([cap.omega_histogram(layer)[1] for layer in cap.depths.tolist()])
    return edges, counts / np.maximum(counts.sum(1, keepdims=True), 1) / np.diff(edges)
