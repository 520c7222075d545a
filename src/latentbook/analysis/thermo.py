"""Attention thermodynamics: the free energy of an attention row, its minimiser, and "cooling" with depth.

An attention row over keys ``j`` is a distribution ``p`` on the simplex. With energies ``E_j`` and inverse
temperature ``beta`` (book/paper.md, "Attention thermodynamics"):

- free energy ``F(p) = sum_j p_j E_j + (1/beta) sum_j p_j log p_j``;
- its minimiser, the Gibbs distribution ``p* = softmax(-beta E)``;
- the minimum ``F_min = F(p*) = -(1/beta) log Z`` with ``Z = sum_j exp(-beta E_j)``;
- the variational identity ``F(p) - F_min = KL(p || p*) / beta >= 0``.

A transformer's logits ``z_j = q.k_j * scaling`` are ``-beta E_j`` with ``beta = 1``: the architecture fixes
``beta``, and the *scale* of the logits (their standard deviation over keys, ``beta_eff``) plays the role of
an inverse temperature. Growing query and key norms raise it: attention sharpens, entropy falls ("cooling").
The per-head statistics of real models come from ``lb.capture(..., attention=True)``
(``capturing/attention.py``); ``cooling`` turns them into a table against depth.

Introduced in: chapter 2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy import optimize, special, stats

from ..errors import InvalidInputError

if TYPE_CHECKING:
    import pandas as pd

SIMPLEX_TOL = 1e-8


def _beta(beta: float) -> float:
    if not np.isfinite(beta) or beta <= 0:
        raise InvalidInputError(
            f"beta (the inverse temperature) must be a positive finite number, got {beta!r}."
        )
    return float(beta)


def _simplex(p: np.ndarray) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64)
    if np.any(p < -SIMPLEX_TOL) or np.any(np.abs(p.sum(-1) - 1.0) > 1e-6):
        raise InvalidInputError(
            "p must be probability rows (entries >= 0 summing to 1 along the last axis); "
            "normalise with p / p.sum(-1, keepdims=True)."
        )
    return np.clip(p, 0.0, None)


def free_energy(p: np.ndarray, energies: np.ndarray, beta: float = 1.0) -> np.ndarray:
    """``F(p) = sum_j p_j E_j + (1/beta) sum_j p_j log p_j`` along the last axis (``0 log 0 = 0``).

    book/paper.md, "Attention thermodynamics". Introduced in: chapter 2.

    Parameters
    ----------
    p : numpy.ndarray
        Probability rows along the last axis (entries >= 0, each row summing to 1).
    energies : numpy.ndarray
        The energies ``E_j``, broadcastable against the rows.
    beta : float
        The inverse temperature, positive and finite; 1 (a transformer's own) by default.

    Returns
    -------
    numpy.ndarray
        ``F(p)`` of each row (the leading shape).

    Raises
    ------
    InvalidInputError
        For rows that are not probabilities, or a ``beta`` that is not positive and finite.

    Examples
    --------
    The Gibbs row attains ``F_min`` and any other row lies above it; uniform attention over 4 keys of equal
    energy has ``F = -log 4``:

    >>> import numpy as np
    >>> from latentbook.analysis import thermo
    >>> energies = np.array([0.0, 1.0, 2.0])
    >>> bool(np.isclose(thermo.free_energy(thermo.gibbs(energies), energies), thermo.f_min(energies)))
    True
    >>> bool(thermo.free_energy(np.array([0.5, 0.3, 0.2]), energies) > thermo.f_min(energies))
    True
    >>> round(float(thermo.free_energy(np.full(4, 0.25), np.zeros(4))), 3), round(float(-np.log(4)), 3)
    (-1.386, -1.386)
    """
    # equivalent mutants here: float64 by promotion
    p, energies = _simplex(p), np.asarray(energies, dtype=np.float64)  # pragma: no mutate
    return (p * energies).sum(-1) + special.xlogy(p, p).sum(-1) / _beta(beta)


def gibbs(energies: np.ndarray, beta: float = 1.0) -> np.ndarray:
    """The minimiser of ``F``: ``p* = softmax(-beta E)`` along the last axis (computed stably).

    Introduced in: chapter 2.

    Parameters
    ----------
    energies : numpy.ndarray
        The energies ``E_j`` along the last axis.
    beta : float
        The inverse temperature, positive and finite; 1 (a transformer's own) by default.

    Returns
    -------
    numpy.ndarray
        ``p*``, the shape of ``energies``.

    Raises
    ------
    InvalidInputError
        For a ``beta`` that is not positive and finite.

    Examples
    --------
    Energies 0 and ``log 2`` give weights in the ratio 2 : 1; a large ``beta`` puts all the weight on the lowest
    energy, and huge energies do not overflow:

    >>> import numpy as np
    >>> from latentbook.analysis import thermo
    >>> np.round(thermo.gibbs(np.array([0.0, np.log(2.0)])), 3)
    array([0.667, 0.333])
    >>> np.round(thermo.gibbs(np.array([0.0, 1.0, 2.0]), beta=50.0), 3)
    array([1., 0., 0.])
    >>> np.round(thermo.gibbs(np.array([1000.0, 1001.0])), 3)
    array([0.731, 0.269])
    """
    return special.softmax(-_beta(beta) * np.asarray(energies, dtype=np.float64), axis=-1)


def f_min(energies: np.ndarray, beta: float = 1.0) -> np.ndarray:
    """``F_min = -(1/beta) log sum_j exp(-beta E_j)`` along the last axis (a stable logsumexp).

    Introduced in: chapter 2.

    Parameters
    ----------
    energies : numpy.ndarray
        The energies ``E_j`` along the last axis.
    beta : float
        The inverse temperature, positive and finite; 1 (a transformer's own) by default.

    Returns
    -------
    numpy.ndarray
        ``F_min`` of each row (the leading shape).

    Raises
    ------
    InvalidInputError
        For a ``beta`` that is not positive and finite.

    Examples
    --------
    ``n`` keys of equal energy ``c`` give ``c - log(n) / beta``, without overflow for huge energies:

    >>> import numpy as np
    >>> from latentbook.analysis import thermo
    >>> round(float(thermo.f_min(np.zeros(4))), 3), round(float(thermo.f_min(np.zeros(4), beta=2.0)), 3)
    (-1.386, -0.693)
    >>> round(float(thermo.f_min(np.array([1000.0, 1000.0]))), 3)  # 1000 - log 2
    999.307
    >>> thermo.f_min(np.zeros((5, 3))).shape  # one value per row
    (5,)
    """
    beta = _beta(beta)
    return -special.logsumexp(-beta * np.asarray(energies, dtype=np.float64), axis=-1) / beta


def entropy(p: np.ndarray) -> np.ndarray:
    """Shannon entropy ``H(p) = -sum_j p_j log p_j`` in nats, along the last axis.

    Uniform attention over ``n`` keys gives ``log n``; a one-hot row gives 0. Introduced in: chapter 2.

    Parameters
    ----------
    p : numpy.ndarray
        Probability rows along the last axis (entries >= 0, each row summing to 1).

    Returns
    -------
    numpy.ndarray
        ``H(p)`` of each row (the leading shape).

    Raises
    ------
    InvalidInputError
        For rows that are not probabilities.

    Examples
    --------
    >>> import numpy as np
    >>> from latentbook.analysis import thermo
    >>> h = thermo.entropy(np.array([[0.25, 0.25, 0.25, 0.25], [1.0, 0.0, 0.0, 0.0]]))
    >>> bool(np.isclose(h[0], np.log(4))), bool(h[1] == 0)  # uniform: log n; one-hot: 0
    (True, True)
    >>> thermo.entropy(np.array([0.5, 0.6]))
    Traceback (most recent call last):
    ...
    latentbook.errors.InvalidInputError: p must be probability rows ...
    """
    p = _simplex(p)
    return -special.xlogy(p, p).sum(-1)


def variational_gap(p: np.ndarray, energies: np.ndarray, beta: float = 1.0) -> np.ndarray:
    """``F(p) - F_min``; equals ``KL(p || softmax(-beta E)) / beta`` and is zero only at the Gibbs row.

    Parameters
    ----------
    p : numpy.ndarray
        Probability rows along the last axis (entries >= 0, each row summing to 1).
    energies : numpy.ndarray
        The energies ``E_j``, broadcastable against the rows.
    beta : float
        The inverse temperature, positive and finite; 1 (a transformer's own) by default.

    Returns
    -------
    numpy.ndarray
        ``F(p) - F_min`` of each row, ``>= 0`` up to rounding.

    Raises
    ------
    InvalidInputError
        For rows that are not probabilities, or a ``beta`` that is not positive and finite.

    Examples
    --------
    The gap of the uniform row is its KL divergence from the Gibbs row over ``beta``; the Gibbs row's is 0:

    >>> import numpy as np
    >>> from scipy import stats
    >>> from latentbook.analysis import thermo
    >>> energies, uniform = np.array([0.0, 1.0, 2.0]), np.full(3, 1 / 3)
    >>> gap = thermo.variational_gap(uniform, energies, beta=2.0)
    >>> round(float(gap), 3), round(float(stats.entropy(uniform, thermo.gibbs(energies, beta=2.0)) / 2.0), 3)
    (0.522, 0.522)
    >>> abs(float(thermo.variational_gap(thermo.gibbs(energies, beta=2.0), energies, beta=2.0))) < 1e-12
    True
    """
    return free_energy(p, energies, beta) - f_min(energies, beta)


def logit_scale(logits: np.ndarray) -> np.ndarray:
    """Effective inverse temperature of logit rows: ``beta_eff = std_j(z_j)`` along the last axis.

    With ``z = -beta E`` and energies standardised to unit spread, ``beta_eff`` is the ``beta`` that scales
    them; it is what ``lb.capture(..., attention=True)`` averages per head. Introduced in: chapter 2.

    Parameters
    ----------
    logits : numpy.ndarray
        Logit rows ``z_j`` along the last axis.

    Returns
    -------
    numpy.ndarray
        ``beta_eff`` of each row (the population standard deviation over keys).

    Examples
    --------
    Logits ``z = -beta E`` of energies standardised to unit spread give back ``beta``:

    >>> import numpy as np
    >>> from latentbook.analysis import thermo
    >>> e = np.random.default_rng(0).standard_normal((4, 100))
    >>> e = (e - e.mean(-1, keepdims=True)) / e.std(-1, keepdims=True)
    >>> np.round(thermo.logit_scale(-3.0 * e), 3)
    array([3., 3., 3., 3.])
    """
    return np.asarray(logits, dtype=np.float64).std(-1)


def fit_beta(p: np.ndarray, energies: np.ndarray, bounds: tuple[float, float] = (1e-6, 1e6)) -> float:
    """The ``beta`` whose Gibbs rows fit the observed rows: ``argmin_beta sum KL(p || softmax(-beta E))``.

    The cross-entropy ``beta <E>_p + log Z(beta)`` is convex in ``beta``; its stationary point solves
    ``<E>_p = <E>_{gibbs(beta)}`` (moment matching), found by a bracketed root search on ``log beta``.
    Rows may be stacked along leading axes. Raises if the observed rows are no sharper than uniform.
    Introduced in: chapter 2.

    Parameters
    ----------
    p : numpy.ndarray
        Probability rows along the last axis (entries >= 0, each row summing to 1).
    energies : numpy.ndarray
        The energies ``E_j`` (``-logits``), broadcastable to the shape of ``p``.
    bounds : tuple of float
        The range of ``beta`` searched, ``(1e-6, 1e6)`` by default.

    Returns
    -------
    float
        The fitted ``beta``, one for all the rows together.

    Raises
    ------
    InvalidInputError
        For rows that are not probabilities, or rows whose mean energy no ``beta`` in ``bounds`` reproduces.

    Examples
    --------
    Gibbs rows at ``beta = 2.5`` give back 2.5; uniform rows are no sharper than uniform, so no ``beta`` fits:

    >>> import numpy as np
    >>> from latentbook.analysis import thermo
    >>> energies = np.random.default_rng(0).standard_normal((50, 10))
    >>> round(thermo.fit_beta(thermo.gibbs(energies, beta=2.5), energies), 3)
    2.5
    >>> thermo.fit_beta(np.full(10, 0.1), np.arange(10.0))
    Traceback (most recent call last):
    ...
    latentbook.errors.InvalidInputError: No beta in the bounds fits these rows: ...
    """
    shape = np.shape(p)  # energies broadcast against the rows as given, stacked axes included
    p = _simplex(p).reshape(-1, shape[-1])  # pragma: no mutate: negative reshape size
    # pragma: no mutate start (float64 by promotion)
    energies = np.broadcast_to(np.asarray(energies, dtype=np.float64), shape).reshape(p.shape)
    # pragma: no mutate end
    target = (p * energies).sum()

    def excess(log_beta: float) -> float:
        return float((gibbs(energies, np.exp(log_beta)) * energies).sum() - target)

    lo, hi = np.log(bounds[0]), np.log(bounds[1])
    if excess(lo) <= 0 or excess(hi) >= 0:
        raise InvalidInputError(
            "No beta in the bounds fits these rows: their mean energy must lie between the uniform row's and "
            "the minimum energy. Check that p and E belong together (E = -logits), or widen bounds."
        )
    return float(np.exp(optimize.brentq(excess, lo, hi, xtol=1e-12)))  # pragma: no mutate: brentq tolerance


def row_check(
    logits: np.ndarray,
    valid: np.ndarray,
    weights: np.ndarray | None = None,
    beta: float = 1.0,
    n_random: int = 8,  # pragma: no mutate: random rows' count
    seed: int = 0,  # pragma: no mutate: default seed
) -> dict[str, float]:
    """The free-energy identities on attention rows with logits ``z`` and energies ``E = -z`` (masked keys out).

    Over all rows (any leading shape, keys on the last axis, ``valid`` marking the keys a query may see):
    ``fmin_error = max |F(softmax(-beta E)) - (-(1/beta) log Z)|``; ``model_gap = max |F(p) - F_min|`` of the
    weights the model used (at ``beta = 1``, the model's own temperature; NaN without ``weights``);
    ``min_random_gap = min F(p) - F_min`` over ``n_random`` Dirichlet rows per row (``>= 0``: the variational
    principle); ``kl_identity_error = max |F(p) - F_min - KL(p || p*) / beta|`` over the same random rows.
    Introduced in: chapter 2 (book/paper.md, "Attention thermodynamics").

    Parameters
    ----------
    logits : numpy.ndarray
        Attention logits ``z``, keys on the last axis (any leading shape).
    valid : numpy.ndarray
        Boolean, the shape of ``logits``: the keys each query may see (at least one per row).
    weights : numpy.ndarray, optional
        The attention weights the model used, the shape of ``logits``; None leaves ``model_gap`` NaN.
    beta : float
        The inverse temperature of the identities, positive and finite; 1 by default.
    n_random : int
        Random Dirichlet rows drawn per row.
    seed : int
        Seed of the random rows.

    Returns
    -------
    dict of str to float
        ``rows`` (how many rows were checked), ``fmin_error``, ``model_gap``, ``min_random_gap`` and
        ``kl_identity_error``.

    Raises
    ------
    InvalidInputError
        For shapes that differ, a row without a valid key, or a ``beta`` that is not positive and finite.

    Examples
    --------
    Rows of random logits (query ``i`` sees keys ``0..i+2``) with the softmax weights a model would use meet
    every identity to rounding, and random rows lie above ``F_min``:

    >>> import numpy as np
    >>> from latentbook.analysis import thermo
    >>> logits = np.random.default_rng(0).standard_normal((4, 6))
    >>> valid = np.tril(np.ones((4, 6), dtype=bool), k=2)
    >>> weights = np.where(valid, np.exp(logits), 0.0)
    >>> weights /= weights.sum(-1, keepdims=True)
    >>> check = thermo.row_check(logits, valid, weights)
    >>> check["rows"], check["fmin_error"] < 1e-12, check["model_gap"] < 1e-12, check["kl_identity_error"] < 1e-12
    (4, True, True, True)
    >>> check["min_random_gap"] > 0
    True
    """
    beta = _beta(beta)
    # equivalent mutants here: valid as given
    z, mask = np.asarray(logits, dtype=np.float64), np.asarray(valid, dtype=bool)  # pragma: no mutate
    if z.ndim < 1 or mask.shape != z.shape or (weights is not None and np.shape(weights) != z.shape):
        raise InvalidInputError(
            f"logits, valid and weights must have the same shape (rows x keys); got {z.shape}, {mask.shape}"
            f" and {None if weights is None else np.shape(weights)}."
        )
    if not mask.any(-1).all():
        raise InvalidInputError("Every row needs at least one valid key: drop padding rows before checking.")
    # equivalent mutants here: negative reshape size
    z, mask = z.reshape(-1, z.shape[-1]), mask.reshape(-1, z.shape[-1])  # pragma: no mutate
    energies = np.where(mask, -z, 0.0)  # pragma: no mutate: masked keys' fill
    log_weights = np.where(mask, -beta * energies, -np.inf)
    log_z = special.logsumexp(log_weights, axis=-1)  # pragma: no mutate: row_check's 2-d rows
    fmin = -log_z / beta
    log_gibbs = np.where(mask, log_weights - log_z[:, None], 0.0)  # pragma: no mutate: masked keys' fill
    result = {
        "rows": len(z),
        "fmin_error": float(np.abs(free_energy(np.exp(log_gibbs) * mask, energies, beta) - fmin).max()),
        "model_gap": float("nan"),  # pragma: no mutate: nan spelling
    }
    if weights is not None:
        used = np.where(mask, np.asarray(weights, dtype=np.float64).reshape(z.shape), 0.0)
        used = used / used.sum(-1, keepdims=True)  # pragma: no mutate: row_check's 2-d rows
        # equivalent mutants here: row_check's 2-d rows
        fmin_model = -special.logsumexp(np.where(mask, z, -np.inf), axis=-1)  # pragma: no mutate
        result["model_gap"] = float(
            # equivalent mutants here: explicit default beta, masked keys' fill
            np.abs(free_energy(used, np.where(mask, -z, 0.0), 1.0) - fmin_model).max()  # pragma: no mutate
        )
    rng = np.random.default_rng(seed)
    draws = rng.gamma(0.5, size=(n_random, *z.shape)) * mask  # pragma: no mutate: random rows' law
    draws = draws / draws.sum(-1, keepdims=True)
    gaps = free_energy(draws, energies, beta) - fmin
    kl = (special.xlogy(draws, draws) - draws * log_gibbs).sum(-1)
    result["min_random_gap"] = float(gaps.min())
    result["kl_identity_error"] = float(np.abs(gaps - kl / beta).max())
    return result


def cooling(attention) -> pd.DataFrame:
    """Head-averaged attention statistics against depth, one row per layer (l = 1..L, ``gamma = l / L``; a
    capture with ``depths=...`` has rows for the layers of its depths only).

    Columns: ``entropy`` (nats), ``normalized_entropy`` (entropy / mean log(number of keys): 1 = uniform),
    ``max_weight``, ``beta_eff`` (mean logit std), ``free_energy`` (mean ``F_min`` with ``beta = 1``),
    ``query_norm``, ``key_norm`` and their product ``qk_norm``. Takes a ``Capture`` made with
    ``attention=True`` or its ``AttentionStats``. Cooling: entropy falls and ``beta_eff`` rises with depth.
    Introduced in: chapter 2.

    Parameters
    ----------
    attention : Capture or AttentionStats
        A capture made with ``attention=True``, or its ``.attention``.

    Returns
    -------
    pandas.DataFrame
        One row per layer recorded, with ``layer``, ``gamma`` and the columns above.

    Raises
    ------
    InvalidInputError
        For anything without attention statistics (a capture made without ``attention=True``).

    Examples
    --------
    Three layers of 4 heads whose queries grow 4-fold per layer against the same keys: the logit scale
    ``beta_eff`` grows 4-fold with them and the entropy falls, which is cooling. The statistics are streamed
    the way ``lb.capture(..., attention=True)`` streams them (``row_statistics`` plus the query and key norms):

    >>> import torch
    >>> from latentbook.analysis import thermo
    >>> from latentbook.capturing.attention import AttentionStats, row_statistics
    >>> g = torch.Generator().manual_seed(0)
    >>> queries = torch.randn(2, 4, 8, 16, generator=g, dtype=torch.float64)  # (batch, heads, T, head dim)
    >>> keys = torch.randn(2, 4, 8, 16, generator=g, dtype=torch.float64)
    >>> causal, rows = torch.ones(8, 8, dtype=torch.bool).tril(), torch.ones(2, 8, dtype=torch.bool)
    >>> stats = AttentionStats(3)
    >>> for layer, scale in enumerate([0.25, 1.0, 4.0]):
    ...     q = scale * queries
    ...     logits = q @ keys.transpose(-1, -2) / 4.0
    ...     weights = torch.softmax(logits.masked_fill(~causal, float("-inf")), dim=-1)
    ...     totals = row_statistics(logits, causal, weights, rows)
    ...     totals["query_norm"], totals["key_norm"] = q.norm(dim=-1).sum((0, 2)), keys.norm(dim=-1).sum((0, 2))
    ...     stats.add(layer, totals)
    >>> frame = thermo.cooling(stats)
    >>> frame["layer"].tolist(), frame["gamma"].round(3).tolist()
    ([1, 2, 3], [0.333, 0.667, 1.0])
    >>> (frame["beta_eff"] / frame["beta_eff"][0]).round(3).tolist()
    [1.0, 4.0, 16.0]
    >>> bool(frame["entropy"].is_monotonic_decreasing), bool((frame["normalized_entropy"] <= 1).all())
    (True, True)
    """
    import pandas as pd

    stats = _attention_stats(attention)
    n_layers = stats.n_layers
    frame = pd.DataFrame(
        {
            "layer": np.arange(1, n_layers + 1),
            "gamma": np.arange(1, n_layers + 1) / n_layers,
            "entropy": stats.entropy().mean(1),
            "normalized_entropy": (stats.entropy() / np.maximum(stats.log_keys(), 1e-300)).mean(1),
            "max_weight": stats.max_weight().mean(1),
            "beta_eff": stats.beta_eff().mean(1),
            "free_energy": stats.free_energy().mean(1),
            "query_norm": stats.query_norm().mean(1),
            "key_norm": stats.key_norm().mean(1),
        }
    )
    frame["qk_norm"] = frame["query_norm"] * frame["key_norm"]
    recorded = stats.n_rows().sum(1) > 0  # every layer, unless captured with depths=... (then theirs only)
    # equivalent mutants here: all-layers shortcut
    return frame if recorded.all() else frame[recorded].reset_index(drop=True)  # pragma: no mutate


def cooling_trend(gamma: np.ndarray, values: np.ndarray) -> dict[str, float]:
    """Monotone trend of a quantity against depth: Spearman ``rho`` (with its p-value) and the OLS slope.

    ``rho < 0`` for entropy, or ``rho > 0`` for ``beta_eff``, is cooling. Introduced in: chapter 2.

    Parameters
    ----------
    gamma : numpy.ndarray
        Depth fractions, 1-D.
    values : numpy.ndarray
        The quantity at those depths, the same length (at least 3).

    Returns
    -------
    dict of str to float
        ``rho``, ``p_value`` and ``slope`` (the OLS slope against ``gamma``).

    Raises
    ------
    InvalidInputError
        For arrays that are not 1-D of the same length, or fewer than 3 depths.

    Examples
    --------
    A quantity falling linearly with depth has ``rho = -1`` and slope ``-1``:

    >>> import numpy as np
    >>> from latentbook.analysis import thermo
    >>> gamma = np.linspace(0.1, 1.0, 10)
    >>> trend = thermo.cooling_trend(gamma, 2.0 - gamma)
    >>> round(trend["rho"], 3), round(trend["slope"], 3), trend["p_value"] < 1e-6
    (-1.0, -1.0, True)
    """
    # pragma: no mutate start (float64 inside scipy and numpy)
    gamma, values = np.asarray(gamma, dtype=np.float64), np.asarray(values, dtype=np.float64)
    # pragma: no mutate end
    if gamma.shape != values.shape or gamma.ndim != 1 or len(gamma) < 3:
        raise InvalidInputError("gamma and values must be 1-d arrays of the same length, at least 3 depths.")
    rho, p_value = stats.spearmanr(gamma, values)
    slope = np.polyfit(gamma, values, 1)[0]
    return {"rho": float(rho), "p_value": float(p_value), "slope": float(slope)}


def _attention_stats(attention):
    from ..capturing.attention import AttentionStats

    if isinstance(attention, AttentionStats):
        return attention
    stats = getattr(attention, "attention", None)
    if isinstance(stats, AttentionStats):
        return stats
    raise InvalidInputError(
        "cooling needs attention statistics: capture with lb.capture(model, prompts, attention=True) "
        "and pass the Capture (or its .attention)."
    )
