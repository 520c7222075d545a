"""Object integrity Omega: the per-token value, its reference points, the paper's levels at other widths, its
null models, and the per-token samples of a capture with the confounds removed.

Usage:

1. ``lb.omega(h)``: Omega along the last axis of a numpy array or torch tensor;
2. ``reference_values(d)``: one-hot, constant, Gaussian (exact and large-d) and k-sparse values;
3. ``level_at_width(level, d)``: a level read at the paper's width carried to width ``d`` (``hoyer``,
   ``massive_omega``); ``permutation_null(x)``, ``gaussian_null(x)``: Omega of the null samples of a token sample;
4. ``samples(cap, layer)``: per-token Omega at a depth with the massive-activation coordinates or the first
   position removed (the two confounds of chapter 3). The profile ``m(gamma)`` is in ``omega_profiles``, the
   bimodality tests in ``bimodality``.

Definition (book/paper.md, "Order parameter"): ``Omega(h) = 1 - ||h||_1 / (sqrt(d) ||h||_2)``, in ``[0, 1 - 1/sqrt(d)]``;
``Omega(0) = 0``. High Omega = few large coordinates (object-like), low = diffuse superposition.
Introduced in: chapter 3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidInputError

if TYPE_CHECKING:
    from ..capturing.results import Capture


# --- Omega and its reference points ---------------------------------------------------------------------


def omega(x: Any) -> Any:
    """``Omega(h) = 1 - ||h||_1 / (sqrt(d) ||h||_2)`` along the last axis; 0 for the zero vector, NaN for a
    vector with a NaN or an infinite coordinate (never a number made up for it).

    A torch tensor gives a float32 tensor (``capturing.accumulators.omega_of``, the function the capture
    streams); anything else is read as a numpy array and gives float64.

    Parameters
    ----------
    x : array_like or torch.Tensor
        Real vectors along the last axis, shape ``(..., d)`` with ``d >= 1``.

    Returns
    -------
    numpy.ndarray or torch.Tensor
        Omega of each vector, shape ``(...)``, in ``[0, 1 - 1/sqrt(d)]``: 0 for a vector spread evenly over
        its coordinates, near 1 for one held by a single coordinate, about 0.20 for a Gaussian vector.

    Raises
    ------
    InvalidInputError
        For a scalar, an empty last axis or complex input.

    Examples
    --------
    One coordinate holding the vector gives the maximum ``1 - 1/sqrt(d)``, a vector spread evenly over its
    coordinates gives 0, and Gaussian vectors sit near ``gaussian_omega(d)``:

    >>> import numpy as np
    >>> import latentbook as lb
    >>> round(float(lb.omega(np.eye(64)[0])), 3)  # one-hot, d = 64: 1 - 1/8
    0.875
    >>> float(lb.omega(np.array([1.0, -1.0, 1.0, -1.0])))  # constant magnitude
    0.0
    >>> h = np.random.default_rng(0).standard_normal((1000, 512))
    >>> lb.omega(h).shape  # one value per vector
    (1000,)
    >>> round(float(lb.omega(h).mean()), 2), round(lb.omega_analysis.gaussian_omega(512), 2)
    (0.2, 0.2)
    >>> float(lb.omega(np.array([1.0, np.nan])))  # never a number made up
    nan
    """
    torch_input = type(x).__module__.startswith("torch")
    shape = tuple(x.shape) if torch_input else np.shape(x)
    if len(shape) == 0 or shape[-1] == 0:
        raise InvalidInputError(f"Omega needs vectors along the last axis; got shape {shape}.")
    if x.is_complex() if torch_input else np.iscomplexobj(x):
        raise InvalidInputError(
            "Omega is defined for real vectors; got complex input: pass its real part or abs."
        )
    if torch_input:
        from ..capturing.accumulators import omega_of

        return omega_of(x)
    h = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore"):  # inf / inf: those rows are NaN below  # pragma: no mutate: errstate
        largest = np.abs(h).max(-1, keepdims=True)  # scaled first: no square overflows
        scaled = np.abs(h) / np.where(largest > 0, largest, 1.0)
        l1 = scaled.sum(-1)
        l2 = np.linalg.norm(scaled, axis=-1)
        safe = np.where(l2 > 0, l2, 1.0)
        value = np.where(l2 > 0, 1.0 - l1 / (np.sqrt(h.shape[-1]) * safe), 0.0)
    return np.where(np.isfinite(h).all(-1), value, np.nan)


def gaussian_omega(d: int) -> float:
    """Exact ``E[Omega(h)]`` for ``h ~ N(0, sigma2 I_d)``: ``1 - sqrt(d / pi) Gamma(d/2) / Gamma((d+1)/2)``.

    ``h / ||h||`` is uniform on the sphere and independent of ``||h||``, so
    ``E[||h||_1 / ||h||_2] = E||h||_1 / E||h||_2 = d sqrt(2/pi) / (sqrt(2) Gamma((d+1)/2) / Gamma(d/2))``.
    Tends to ``1 - sqrt(2/pi) = 0.2021`` as ``d -> inf`` (0.1769 at d = 8).

    Parameters
    ----------
    d : int
        The dimension of the Gaussian vector.

    Returns
    -------
    float
        ``E[Omega(h)]`` at that dimension.

    Examples
    --------
    The exact value at ``d = 8``, the large-d limit ``1 - sqrt(2/pi)``, and the mean Omega of Gaussian vectors
    drawn at ``d = 8``, within sampling error of the exact value:

    >>> import numpy as np
    >>> from latentbook.analysis.omega import gaussian_omega, omega
    >>> round(gaussian_omega(8), 4), round(gaussian_omega(10**6), 4), round(float(1 - np.sqrt(2 / np.pi)), 4)
    (0.1769, 0.2021, 0.2021)
    >>> h = np.random.default_rng(0).standard_normal((4000, 8))
    >>> bool(abs(float(omega(h).mean()) - gaussian_omega(8)) < 0.005)
    True
    """
    from scipy.special import gammaln

    return float(1.0 - np.sqrt(d / np.pi) * np.exp(gammaln(d / 2) - gammaln((d + 1) / 2)))


def reference_values(d: int, k: int | None = None) -> dict[str, float]:
    """Omega of the paper's reference vectors in dimension ``d``.

    ``one_hot = 1 - 1/sqrt(d)`` (the maximum), ``constant = 0`` (equal magnitudes, the minimum),
    ``gaussian`` (exact expectation, ``gaussian_omega``), ``gaussian_limit = 1 - sqrt(2/pi)``, and with ``k``,
    ``k_sparse = 1 - sqrt(k/d)`` (``k`` equal-magnitude nonzero coordinates).

    Parameters
    ----------
    d : int
        The dimension (a positive integer).
    k : int, optional
        Nonzero coordinates of the k-sparse vector, in ``1..d``; None leaves ``k_sparse`` out.

    Returns
    -------
    dict of str to float
        ``one_hot``, ``constant``, ``gaussian``, ``gaussian_limit`` and, with ``k``, ``k_sparse``.

    Raises
    ------
    InvalidInputError
        For a ``d`` that is not a positive integer or a ``k`` outside ``1..d``.

    Examples
    --------
    At ``d = 64``: the one-hot maximum ``1 - 1/8``, and a vector of four equal-magnitude coordinates has the
    ``k_sparse`` value ``1 - sqrt(4/64)``:

    >>> import numpy as np
    >>> from latentbook.analysis.omega import omega, reference_values
    >>> ref = reference_values(64, k=4)
    >>> ref["one_hot"], ref["constant"], ref["k_sparse"]
    (0.875, 0.0, 0.75)
    >>> round(ref["gaussian"], 3), round(ref["gaussian_limit"], 4)
    (0.199, 0.2021)
    >>> float(omega(np.array([1.0, -1.0, 1.0, -1.0] + [0.0] * 60)))
    0.75
    """
    if not isinstance(d, (int, np.integer)) or d < 1:
        raise InvalidInputError(f"d must be a positive integer, got {d!r}.")
    values = {
        "one_hot": 1.0 - 1.0 / np.sqrt(d),
        "constant": 0.0,
        "gaussian": gaussian_omega(int(d)),
        "gaussian_limit": 1.0 - np.sqrt(2.0 / np.pi),
    }
    if k is not None:
        if not isinstance(k, (int, np.integer)) or not 1 <= k <= d:
            raise InvalidInputError(f"k must be an integer in 1..d={d}, got {k!r}.")
        values["k_sparse"] = 1.0 - np.sqrt(k / d)
    return {name: float(v) for name, v in values.items()}


# --- width and the paper's levels ------------------------------------------------------------------------

PAPER_WIDTH = 5120  # d of Qwen2.5-32B, the paper's ~30B model, where its levels 0.69 and 0.90 were read


def hoyer(x: Any) -> Any:
    """Hoyer's (2004) sparseness ``(sqrt(d) - ||h||_1 / ||h||_2) / (sqrt(d) - 1) = Omega sqrt(d) / (sqrt(d) - 1)``.

    Omega rescaled so that a one-hot vector gives 1 at every width (Omega's maximum is ``1 - 1/sqrt(d)``).

    Parameters
    ----------
    x : array_like
        Real vectors along the last axis, shape ``(..., d)`` with ``d >= 2``.

    Returns
    -------
    numpy.ndarray
        Hoyer's sparseness of each vector, shape ``(...)``, in ``[0, 1]``.

    Raises
    ------
    InvalidInputError
        For fewer than two coordinates.

    Examples
    --------
    A one-hot vector gives 1 at ``d = 4`` and at ``d = 1024``, where its Omega is ``1 - 1/32``; equal magnitudes
    give 0:

    >>> import numpy as np
    >>> from latentbook.analysis.omega import hoyer, omega
    >>> round(float(hoyer(np.eye(4)[0])), 6), round(float(hoyer(np.eye(1024)[0])), 6)
    (1.0, 1.0)
    >>> float(omega(np.eye(1024)[0]))
    0.96875
    >>> float(hoyer(np.ones(16)))
    0.0
    >>> hoyer(np.eye(8)).shape  # one value per vector
    (8,)
    """
    h = np.asarray(x, dtype=np.float64)
    d = h.shape[-1]
    if d < 2:
        raise InvalidInputError(f"Hoyer's measure needs d >= 2 coordinates, got shape {h.shape}.")
    return omega(h) * np.sqrt(d) / (np.sqrt(d) - 1)


def level_at_width(level: float, d: int, d_from: int = PAPER_WIDTH, structure: str = "hoyer") -> float:
    """The Omega at width ``d`` of the structure that has Omega ``level`` at width ``d_from``.

    ``structure="hoyer"``: the same Hoyer sparseness, ``level (1 - 1/sqrt(d)) / (1 - 1/sqrt(d_from))`` (the book's
    choice: it fixes Omega's width-dependent range and nothing else). ``structure="massive"``: one coordinate
    ``c`` times the others' s.d. on a Gaussian vector, ``c`` solved at ``d_from`` (``massive_omega``), then the
    Omega of that ``c`` at ``d``: this structure's Omega falls with width (a fixed count of large coordinates is
    a smaller share of a wider vector), which is why levels do not carry over between widths.

    Parameters
    ----------
    level : float
        The Omega at width ``d_from``, in ``(0, 1 - 1/sqrt(max(d, d_from)))``.
    d : int
        The width to carry the level to.
    d_from : int
        The width the level was read at; by default ``PAPER_WIDTH`` (5120, the paper's ~30B model).
    structure : {"hoyer", "massive"}
        What is held fixed between the widths (see above); by default the Hoyer sparseness.

    Returns
    -------
    float
        The Omega of the same structure at width ``d``.

    Raises
    ------
    InvalidInputError
        For a ``level`` out of range, a ``"massive"`` level at or below a Gaussian vector's Omega, or another
        ``structure``.

    Examples
    --------
    The paper's level 0.69 (read at width 5120) carried to width 896: the same Hoyer sparseness is a slightly
    lower Omega at the narrower width, while the same massive coordinate weighs more in the narrower vector:

    >>> from latentbook.analysis.omega import level_at_width
    >>> round(level_at_width(0.69, 5120), 6)  # the same width: the same level
    0.69
    >>> round(level_at_width(0.69, 896), 3), round(level_at_width(0.69, 896, structure="massive"), 3)
    (0.676, 0.835)
    """
    from scipy.optimize import brentq

    if not 0 < level < 1 - 1 / np.sqrt(max(d, d_from)):
        raise InvalidInputError(f"level must lie in (0, 1 - 1/sqrt(d)), got {level!r}.")
    if structure == "hoyer":
        return float(level * (1 - 1 / np.sqrt(d)) / (1 - 1 / np.sqrt(d_from)))
    if structure == "massive":
        if level <= massive_omega(d_from, 0.0):
            raise InvalidInputError(
                f"level {level} is below a Gaussian vector's Omega: no massive coordinate."
            )
        c = brentq(lambda c: massive_omega(d_from, c) - level, 0.0, 1e9)
        return float(massive_omega(d, c))
    raise InvalidInputError(f"structure must be 'hoyer' or 'massive', got {structure!r}.")


def massive_omega(d: int, c: float) -> float:
    """Large-d Omega of a Gaussian vector with one coordinate ``c`` times the others' s.d.:
    ``1 - (c + (d - 1) sqrt(2/pi)) / (sqrt(d) sqrt(c^2 + d - 1))``.

    Parameters
    ----------
    d : int
        The dimension of the vector.
    c : float
        The massive coordinate, in units of the other coordinates' standard deviation (0: a plain Gaussian vector).

    Returns
    -------
    float
        The large-d Omega of that vector.

    Examples
    --------
    Without a massive coordinate it is the Gaussian value; with one of 1000 s.d. at ``d = 4096`` it matches the
    mean Omega of such vectors drawn at random:

    >>> import numpy as np
    >>> from latentbook.analysis.omega import massive_omega, omega
    >>> round(massive_omega(4096, 0.0), 4)
    0.2022
    >>> h = np.random.default_rng(0).standard_normal((200, 4096))
    >>> h[:, 0] = 1000.0
    >>> round(massive_omega(4096, 1000.0), 3), round(float(omega(h).mean()), 3)
    (0.933, 0.933)
    """
    return float(1 - (c + (d - 1) * np.sqrt(2 / np.pi)) / (np.sqrt(d) * np.sqrt(c**2 + d - 1)))


# --- null models of a token sample -------------------------------------------------------------------------


def permutation_null(x: np.ndarray, seed: int = 0) -> np.ndarray:  # pragma: no mutate: default seed
    """Omega of each token of the coordinate-permuted sample (Buja & Eyuboglu 1992).

    Every coordinate is permuted across tokens independently: each coordinate keeps its distribution (its
    scale, its massive values) and every structure *within* a token is destroyed. When ``m`` of the permuted
    sample equals ``m`` of the sample, Omega measures how unequal the coordinates' scales are, not tokens.

    Parameters
    ----------
    x : numpy.ndarray
        Token vectors, shape ``(n, d)`` with ``n >= 2``.
    seed : int
        Seed of the permutations.

    Returns
    -------
    numpy.ndarray
        Omega of each permuted token, shape ``(n,)``.

    Raises
    ------
    InvalidInputError
        For a sample that is not of shape ``(n >= 2, d)``.

    Examples
    --------
    Gaussian tokens with unequal coordinate scales keep their mean Omega under the permutation (it comes from
    the scales), one-hot tokens lose most of theirs (it comes from within each token):

    >>> import numpy as np
    >>> from latentbook.analysis.omega import omega, permutation_null
    >>> rng = np.random.default_rng(0)
    >>> scaled = rng.standard_normal((500, 64)) * np.linspace(0.1, 10, 64)
    >>> round(float(omega(scaled).mean()), 2), round(float(permutation_null(scaled).mean()), 2)
    (0.3, 0.3)
    >>> one_hot = np.eye(64)[rng.integers(0, 64, 500)]
    >>> null = permutation_null(one_hot)
    >>> null.shape, round(float(omega(one_hot).mean()), 3), bool(null.mean() < 0.6)
    ((500,), 0.875, True)
    """
    h = np.asarray(x, dtype=np.float64)
    if h.ndim != 2 or len(h) < 2:
        raise InvalidInputError(f"Need token vectors of shape (n >= 2, d), got {h.shape}.")
    return omega(np.random.default_rng(seed).permuted(h, axis=0))


def gaussian_null(x: np.ndarray, seed: int = 0) -> np.ndarray:
    """Omega of Gaussian tokens with the sample's mean and covariance: ``z = mean + sum_t e_t (h_t - mean) /
    sqrt(n - 1)``, ``e ~ N(0, I_n)`` (exactly the sample covariance, also when ``n < d``).

    Parameters
    ----------
    x : numpy.ndarray
        Token vectors, shape ``(n, d)`` with ``n >= 2``.
    seed : int
        Seed of the Gaussian draws ``e``.

    Returns
    -------
    numpy.ndarray
        Omega of each of the ``n`` Gaussian tokens, shape ``(n,)``.

    Raises
    ------
    InvalidInputError
        For a sample that is not of shape ``(n >= 2, d)``.

    Examples
    --------
    Gaussian tokens with unequal coordinate scales are their own Gaussian null; one-hot tokens along random axes
    (a covariance near ``I / 64``) fall to near the Gaussian value:

    >>> import numpy as np
    >>> from latentbook.analysis.omega import gaussian_null, gaussian_omega, omega
    >>> rng = np.random.default_rng(0)
    >>> scaled = rng.standard_normal((500, 64)) * np.linspace(0.1, 10, 64)
    >>> round(float(omega(scaled).mean()), 2), round(float(gaussian_null(scaled).mean()), 2)
    (0.3, 0.3)
    >>> one_hot = np.eye(64)[rng.integers(0, 64, 500)]
    >>> null = gaussian_null(one_hot)
    >>> null.shape, bool(abs(float(null.mean()) - gaussian_omega(64)) < 0.03)
    ((500,), True)
    """
    h = np.asarray(x, dtype=np.float64)
    if h.ndim != 2 or len(h) < 2:
        raise InvalidInputError(f"Need token vectors of shape (n >= 2, d), got {h.shape}.")
    centred = h - h.mean(0)
    e = np.random.default_rng(seed).standard_normal((len(h), len(h)))
    return omega(h.mean(0) + e @ centred / np.sqrt(len(h) - 1))


# --- samples of a capture, with the confounds removed ---------------------------------------------------


def top_dims(vectors: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` coordinates with the largest ``max |h_i|`` over the rows of ``vectors`` (massive activations).

    Parameters
    ----------
    vectors : numpy.ndarray
        Token vectors, shape ``(n, d)``.
    k : int
        How many coordinates, ``0 <= k < d``.

    Returns
    -------
    numpy.ndarray
        The ``k`` coordinate indices, sorted ascending.

    Raises
    ------
    InvalidInputError
        For vectors that are not 2-D or a ``k`` outside ``0..d-1``.

    Examples
    --------
    Two coordinates planted large in a few Gaussian tokens are found:

    >>> import numpy as np
    >>> from latentbook.analysis.omega import top_dims
    >>> x = np.random.default_rng(0).standard_normal((100, 16))
    >>> x[:3, 7], x[5, 3] = 50.0, -40.0
    >>> top_dims(x, 2).tolist(), top_dims(x, 1).tolist(), top_dims(x, 0).tolist()
    ([3, 7], [7], [])
    """
    x = np.asarray(vectors, dtype=np.float64)
    if x.ndim != 2 or not 0 <= k < x.shape[1]:
        raise InvalidInputError(f"Need vectors (n, d) and 0 <= k < d; got shape {x.shape} and k={k!r}.")
    return np.sort(np.argsort(np.abs(x).max(0), kind="stable")[::-1][:k])


def omega_without_top_dims(vectors: np.ndarray, k: int, dims: np.ndarray | None = None) -> np.ndarray:
    """Omega of each row after dropping ``k`` coordinates: ``dims`` if given, else ``top_dims(vectors, k)``.

    Parameters
    ----------
    vectors : numpy.ndarray
        Token vectors, shape ``(n, d)``.
    k : int
        How many coordinates to drop.
    dims : numpy.ndarray, optional
        The ``k`` coordinate indices to drop; None drops ``top_dims(vectors, k)`` (the largest of these rows).

    Returns
    -------
    numpy.ndarray
        Omega of each row on the remaining ``d - k`` coordinates, shape ``(n,)``.

    Raises
    ------
    InvalidInputError
        For ``dims`` that do not hold ``k`` indices, or what ``top_dims`` refuses.

    Examples
    --------
    Tokens held by one massive coordinate look object-like; without it they are Gaussian-like again:

    >>> import numpy as np
    >>> from latentbook.analysis.omega import omega, omega_without_top_dims
    >>> x = np.random.default_rng(0).standard_normal((100, 16))
    >>> x[:, 7] = 50.0
    >>> bool(np.all(omega(x) > 0.6)), bool(np.all(omega_without_top_dims(x, 1) < 0.4))
    (True, True)
    >>> bool(np.array_equal(omega_without_top_dims(x, 1, dims=np.array([7])), omega(np.delete(x, 7, axis=1))))
    True
    """
    x = np.asarray(vectors, dtype=np.float64)
    drop = top_dims(x, k) if dims is None else np.asarray(dims, dtype=np.int64)
    if len(drop) != k:
        raise InvalidInputError(f"Got {len(drop)} dims to drop but k={k}.")
    return omega(np.delete(x, drop, axis=-1))


def samples(
    cap: Capture, layer: int, drop_top_dims: int = 0, drop_first: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Per-token Omega at ``layer`` of a capture's token sample, and the prompt of each token.

    Default: the Omega sample (``cap.omega_samples``, up to ``n_omega_samples`` tokens). With
    ``drop_top_dims = k``: Omega recomputed from the vector sample (``cap.token_vectors``, fewer tokens) without
    the ``k`` coordinates of largest ``max |h_i|`` over *all* captured tokens at that layer (``cap.abs_max``).
    With ``drop_first``: tokens at position 0 removed (the attention-sink token; the same tokens the capture's
    ``exclude_first`` drops).

    Parameters
    ----------
    cap : Capture
        The capture whose token samples are read.
    layer : int
        A depth ``l`` in ``0..L`` that ``cap`` holds; negative counts from ``L``.
    drop_top_dims : int
        Coordinates of largest ``max |h_i|`` to drop before recomputing Omega; 0 (the default) keeps the Omega
        sample as captured.
    drop_first : bool
        Remove the tokens at position 0.

    Returns
    -------
    values : numpy.ndarray
        Omega of each kept token, shape ``(n_tokens,)``.
    prompt_ids : numpy.ndarray
        The prompt each of those tokens comes from, shape ``(n_tokens,)``.

    Examples
    --------
    A capture of 32 prompts of 8 Gaussian tokens (``d = 32``) whose first-position tokens carry a massive
    coordinate at depth 1: removing either confound brings the mean Omega down to the Gaussian value:

    >>> import numpy as np
    >>> from latentbook.analysis import synthetic
    >>> from latentbook.analysis.omega import gaussian_omega, samples
    >>> rng = np.random.default_rng(0)
    >>> ids, positions = np.repeat(np.arange(32), 8), np.tile(np.arange(8), 32)
    >>> states = rng.standard_normal((2, 256, 32))
    >>> states[1, positions == 0, 5] = 1000.0
    >>> cap = synthetic.as_capture(states, ids, positions, n_vectors=256)
    >>> values, prompt_ids = samples(cap, 1)
    >>> values.shape, prompt_ids.shape, round(float(values.mean()), 2)
    ((256,), (256,), 0.27)
    >>> values, prompt_ids = samples(cap, 1, drop_first=True)
    >>> values.shape, round(float(values.mean()), 3), round(gaussian_omega(32), 3)
    ((224,), 0.194, 0.196)
    >>> without_top, _ = samples(cap, 1, drop_top_dims=1)
    >>> without_top.shape, bool(abs(float(without_top.mean()) - gaussian_omega(31)) < 0.01)
    ((256,), True)
    """
    if drop_top_dims:
        dims = np.sort(np.argsort(cap.abs_max(layer), kind="stable")[::-1][:drop_top_dims])
        values = omega_without_top_dims(cap.token_vectors(layer), drop_top_dims, dims)
        reservoir = cap.vectors
    else:
        values = cap.omega_samples(layer)
        reservoir = cap.omega_sample
    keep = reservoir.positions > 0 if drop_first else np.ones(len(values), dtype=bool)
    return values[keep], reservoir.prompt_ids[keep]
