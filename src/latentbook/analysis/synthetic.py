"""Generators with known answers: the ground truth every estimator in ``latentbook.analysis`` is tested on.

Each generator is seeded (``numpy.random.default_rng(seed)``) and returns plain arrays or a small dataclass
that carries the planted answer next to the data, so a test or a chapter reads both from one object:

- ``gaussian(n, d)``: i.i.d. isotropic Gaussian tokens, the pure Marchenko–Pastur null (chapter 4);
- ``spiked_covariance(n, d, spikes)``: isotropic noise plus a few planted population eigenvalues (chapter 4);
- ``clustered_tokens(n_prompts, m, d, rho)``: tokens correlated within a prompt, the null of real captures;
- ``curved_manifold(n_prompts, m, d0, d)``: prompt-correlated tokens on a curved ``d0``-dimensional manifold
  in ``d`` dimensions, with noise (chapter 9's intrinsic dimension);
- ``mixture(n, d, k, separation)``: ``k`` equiprobable prototypes plus isotropic noise
  (Theorem 6.3, chapter 6);
- ``contraction_chain(n, d, n_steps, q)``: a linear depth chain that contracts a transverse subspace by ``q``
  per step (Theorem 6.1, chapter 5);
- ``order_parameter_curve(gamma_c, width, amplitude)``: a sigmoid ``m(gamma)`` with noise (chapter 3);
- ``planted_binding(rng, code)``: token states of variable-binding programs with a known value code (stable
  across steps, per step, only the bag of values, the first value, none), for ``tco`` (chapters 6 and 8);
- ``as_capture(states, prompt_ids, positions)``: any of these token sets as a ``Capture``, so a null model runs
  through exactly the code a model's capture does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidInputError

if TYPE_CHECKING:
    from ..capturing.results import Capture


def _positive_int(name: str, value: int) -> int:
    if not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidInputError(f"{name} must be a positive integer, got {value!r}.")
    return int(value)


def _positive(name: str, value: float) -> float:
    if not np.isfinite(value) or value <= 0:
        raise InvalidInputError(f"{name} must be a positive finite number, got {value!r}.")
    return float(value)


def random_orthonormal(d: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` random orthonormal columns in ``R^d``, shape ``(d, k)`` (Haar: QR of a Gaussian matrix).

    Parameters
    ----------
    d : int
        The dimension.
    k : int
        The number of columns, at most ``d``.
    rng : numpy.random.Generator
        The random generator drawn from.

    Returns
    -------
    numpy.ndarray
        Orthonormal columns, shape ``(d, k)``.

    Raises
    ------
    InvalidInputError
        For ``k > d``.

    Examples
    --------
    >>> import numpy as np
    >>> from latentbook.analysis import synthetic
    >>> u = synthetic.random_orthonormal(5, 3, np.random.default_rng(0))
    >>> u.shape, bool(np.allclose(u.T @ u, np.eye(3)))
    ((5, 3), True)
    """
    if k > d:
        raise InvalidInputError(f"Cannot draw {k} orthonormal directions in dimension {d}: use k <= d.")
    q, r = np.linalg.qr(rng.standard_normal((d, k)))
    return q * np.sign(np.diag(r))


def gaussian(n: int, d: int, sigma2: float = 1.0, seed: int = 0) -> np.ndarray:
    """``n`` tokens ``h ~ N(0, sigma2 I_d)``, shape ``(n, d)``.

    Their sample covariance follows the Marchenko–Pastur law with ratio ``q = d/n`` and scale ``sigma2``;
    their Omega concentrates at ``1 - sqrt(2/pi)`` for large ``d`` (book/paper.md, "Order parameter").
    Introduced in: chapter 3 (Omega reference) and chapter 4 (MP null).

    Parameters
    ----------
    n : int
        The number of tokens.
    d : int
        Their dimension.
    sigma2 : float
        The variance of each coordinate, positive.
    seed : int
        Seed of the draw.

    Returns
    -------
    numpy.ndarray
        The tokens, shape ``(n, d)``.

    Raises
    ------
    InvalidInputError
        For ``n`` or ``d`` not a positive integer, or ``sigma2`` not positive and finite.

    Examples
    --------
    The coordinates have variance ``sigma2``, and Omega sits at its Gaussian value ``1 - sqrt(2/pi) = 0.20``:

    >>> import latentbook as lb
    >>> from latentbook.analysis import synthetic
    >>> x = synthetic.gaussian(2000, 50, sigma2=4.0)
    >>> x.shape, round(float(x.var()), 1)
    ((2000, 50), 4.0)
    >>> round(float(lb.omega(x).mean()), 2)
    0.2
    """
    n, d = _positive_int("n", n), _positive_int("d", d)
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)) * np.sqrt(_positive("sigma2", sigma2))


@dataclass(frozen=True)
class Spiked:
    """Tokens ``x`` (n, d) with population covariance ``sigma2 I + sum_i (spikes_i - sigma2) u_i u_i^T``.

    Attributes
    ----------
    x : numpy.ndarray
        The tokens, shape ``(n, d)``.
    spikes : numpy.ndarray
        The planted population eigenvalues, descending.
    directions : numpy.ndarray
        Their orthonormal eigenvectors ``u_i``, shape ``(d, n_spikes)``.
    sigma2 : float
        The noise variance.

    Examples
    --------
    ``spiked_covariance`` returns one; the population covariance has the planted eigenpairs:

    >>> import numpy as np
    >>> from latentbook.analysis import synthetic
    >>> planted = synthetic.spiked_covariance(500, 20, [6.0, 3.0])
    >>> u, ell = planted.directions, planted.spikes
    >>> population = planted.sigma2 * np.eye(20) + (u * (ell - planted.sigma2)) @ u.T
    >>> planted.x.shape, ell.tolist(), bool(np.allclose(population @ u, u * ell))
    ((500, 20), [6.0, 3.0], True)
    """

    x: np.ndarray
    spikes: np.ndarray  # planted population eigenvalues, descending
    directions: np.ndarray  # (d, n_spikes), orthonormal columns u_i
    sigma2: float


def spiked_covariance(
    n: int, d: int, spikes: list[float] | np.ndarray, sigma2: float = 1.0, seed: int = 0
) -> Spiked:
    """Isotropic noise of variance ``sigma2`` plus planted population eigenvalues ``spikes`` (each > sigma2).

    ``h = sqrt(sigma2) z + sum_i sqrt(spikes_i - sigma2) g_i u_i`` with ``z, g`` standard normal and random
    orthonormal ``u_i``. With ``q = d/n``, a spike ``ell = sigma2 (1 + theta)`` separates from the MP bulk iff
    ``theta > sqrt(q)`` (BBP) and then sits near ``sigma2 (1 + theta)(1 + q/theta)``
    (see ``mp_law.spike_location``).
    Introduced in: chapter 4.

    Parameters
    ----------
    n : int
        The number of tokens.
    d : int
        Their dimension.
    spikes : list of float or numpy.ndarray
        The planted population eigenvalues, each above ``sigma2``.
    sigma2 : float
        The noise variance, positive.
    seed : int
        Seed of the draw.

    Returns
    -------
    Spiked
        The tokens with the spikes (descending), their directions and ``sigma2``.

    Raises
    ------
    InvalidInputError
        For ``n`` or ``d`` not a positive integer, ``sigma2`` not positive and finite, or a spike not above it.

    Examples
    --------
    With ``q = d/n = 0.05`` both spikes lie above the BBP threshold: the top sample eigenvalues sit near
    ``mp_law.spike_location`` (10.06 and 5.06), the next at the bulk's edge ``(1 + sqrt q)^2 = 1.50``, and the
    top eigenvector lines up with the planted direction:

    >>> import numpy as np
    >>> from latentbook.analysis import mp_law, synthetic
    >>> planted = synthetic.spiked_covariance(2000, 100, [10.0, 5.0])
    >>> eigvals, eigvecs = np.linalg.eigh(np.cov(planted.x, rowvar=False, bias=True))
    >>> expected = mp_law.spike_location(planted.spikes, 1.0, 100 / 2000)
    >>> bool(np.allclose(eigvals[::-1][:2], expected, rtol=0.05)), bool(abs(eigvals[-3] - 1.5) < 0.1)
    (True, True)
    >>> bool(abs(eigvecs[:, -1] @ planted.directions[:, 0]) > 0.99)
    True
    """
    n, d = _positive_int("n", n), _positive_int("d", d)
    sigma2 = _positive("sigma2", sigma2)
    ell = np.sort(np.asarray(spikes, dtype=np.float64).ravel())[::-1]
    if np.any(~np.isfinite(ell)) or np.any(ell <= sigma2):
        raise InvalidInputError(
            f"Every spike must be a population eigenvalue above sigma2={sigma2}; got {ell}."
        )
    rng = np.random.default_rng(seed)
    u = random_orthonormal(d, len(ell), rng)
    x = rng.standard_normal((n, d)) * np.sqrt(sigma2)
    x += (rng.standard_normal((n, len(ell))) * np.sqrt(ell - sigma2)) @ u.T
    return Spiked(x, ell, u, sigma2)


@dataclass(frozen=True)
class Clustered:
    """Tokens grouped in prompts, correlated within a prompt: ``x = sqrt(rho) b_prompt + sqrt(1 - rho) w``.

    Attributes
    ----------
    x : numpy.ndarray
        The tokens, shape ``(n_prompts * tokens_per_prompt, d)``, prompt after prompt.
    prompt_ids : numpy.ndarray
        The prompt of each token, shape ``(n,)``.
    positions : numpy.ndarray
        The position of each token in its prompt, shape ``(n,)``.
    rho : float
        The intra-prompt correlation of every coordinate.

    Examples
    --------
    ``clustered_tokens`` returns one, prompt after prompt:

    >>> from latentbook.analysis import synthetic
    >>> clustered = synthetic.clustered_tokens(n_prompts=3, tokens_per_prompt=2, d=4, rho=0.5)
    >>> clustered.x.shape, clustered.prompt_ids.tolist(), clustered.positions.tolist(), clustered.rho
    ((6, 4), [0, 0, 1, 1, 2, 2], [0, 1, 0, 1, 0, 1], 0.5)
    """

    x: np.ndarray  # (n_prompts * tokens_per_prompt, d)
    prompt_ids: np.ndarray  # (n,) prompt of each token
    positions: np.ndarray  # (n,) position of each token in its prompt
    rho: float  # intra-prompt correlation of every coordinate


def clustered_tokens(
    n_prompts: int, tokens_per_prompt: int, d: int, rho: float, sigma2: float = 1.0, seed: int = 0
) -> Clustered:
    """Prompt-correlated tokens: a shared ``b ~ N(0, sigma2 I)`` per prompt, ``w ~ N(0, sigma2 I)`` per token.

    Every coordinate has variance ``sigma2`` and correlation ``rho`` between two tokens of one prompt (the
    intraclass correlation), 0 across prompts. The sample covariance of these ``N`` tokens spreads like
    i.i.d. data of ``N / (1 + (m - 1) rho^2)`` tokens (``m`` tokens per prompt; see
    ``spectra.effective_sample_size``): the null model for real captures, whose tokens share a prompt.
    Introduced in: chapter 4.

    Parameters
    ----------
    n_prompts : int
        The number of prompts.
    tokens_per_prompt : int
        ``m``, the tokens of each prompt.
    d : int
        The dimension.
    rho : float
        The intra-prompt correlation, in ``[0, 1]``.
    sigma2 : float
        The variance of each coordinate, positive.
    seed : int
        Seed of the draw.

    Returns
    -------
    Clustered
        The tokens, their prompts and positions, and ``rho``.

    Raises
    ------
    InvalidInputError
        For counts that are not positive integers, ``sigma2`` not positive and finite, or ``rho`` outside
        ``[0, 1]``.

    Examples
    --------
    Two tokens of one prompt are correlated by ``rho = 0.3``, tokens of different prompts not at all:

    >>> import numpy as np
    >>> from latentbook.analysis import synthetic
    >>> clustered = synthetic.clustered_tokens(n_prompts=500, tokens_per_prompt=4, d=20, rho=0.3)
    >>> first, second = clustered.x[clustered.positions == 0], clustered.x[clustered.positions == 1]
    >>> same = np.corrcoef(first.ravel(), second.ravel())[0, 1]
    >>> other = np.corrcoef(first[1:].ravel(), second[:-1].ravel())[0, 1]
    >>> bool(abs(same - 0.3) < 0.03), bool(abs(other) < 0.03)
    (True, True)
    """
    n_prompts, m = (
        _positive_int("n_prompts", n_prompts),
        _positive_int("tokens_per_prompt", tokens_per_prompt),
    )
    d, sigma2 = _positive_int("d", d), _positive("sigma2", sigma2)
    if not 0.0 <= rho <= 1.0:
        raise InvalidInputError(f"rho is a correlation in [0, 1], got {rho!r}.")
    rng = np.random.default_rng(seed)
    shared = np.repeat(rng.standard_normal((n_prompts, d)), m, axis=0)
    x = np.sqrt(sigma2) * (
        np.sqrt(rho) * shared + np.sqrt(1.0 - rho) * rng.standard_normal((n_prompts * m, d))
    )
    return Clustered(x, np.repeat(np.arange(n_prompts), m), np.tile(np.arange(m), n_prompts), float(rho))


@dataclass(frozen=True)
class Manifold:
    """Tokens on a curved manifold of known dimension (``curved_manifold``).

    Attributes
    ----------
    x : numpy.ndarray
        The tokens, shape ``(n_prompts * tokens_per_prompt, d)``.
    prompt_ids : numpy.ndarray
        The prompt of each token, shape ``(n,)``.
    dimension : int
        The manifold's dimension ``d0``.

    Examples
    --------
    ``curved_manifold`` returns one:

    >>> from latentbook.analysis import synthetic
    >>> manifold = synthetic.curved_manifold(5, 4, 2, 10)
    >>> manifold.x.shape, manifold.prompt_ids[:6].tolist(), manifold.dimension
    ((20, 10), [0, 0, 0, 0, 1, 1], 2)
    """

    x: np.ndarray  # (n_prompts * tokens_per_prompt, d)
    prompt_ids: np.ndarray  # (n,) prompt of each token
    dimension: int  # the manifold's dimension d0


def curved_manifold(
    n_prompts: int,
    tokens_per_prompt: int,
    dimension: int,
    d: int,
    *,
    rho: float = 0.0,
    curvature: float = 0.5,
    noise: float = 0.0,
    seed: int = 0,
) -> Manifold:
    """``x = A z + curvature B q(z) / sqrt(d0) + noise e``: latent ``z = sqrt(rho) c_prompt + sqrt(1 - rho) w``
    (``c, w ~ N(0, I_d0)``: tokens of a prompt correlated by ``rho``), ``q(z)`` the ``d0 (d0 + 1) / 2`` products
    ``z_i z_j`` (``i <= j``), ``A`` and ``B`` orthonormal maps into ``R^d`` (independent columns) and ``e ~ N(0, I_d)``.
    A smooth ``d0``-dimensional manifold (a graph over ``A z``), bent by ``curvature``, thickened by ``noise``.
    Introduced in: chapter 9.

    Parameters
    ----------
    n_prompts : int
        The number of prompts.
    tokens_per_prompt : int
        The tokens of each prompt.
    dimension : int
        ``d0``, the manifold's dimension.
    d : int
        The ambient dimension, at least ``d0 + d0 (d0 + 1) / 2``.
    rho : float
        The correlation of the latent ``z`` of two tokens of one prompt, in ``[0, 1)``.
    curvature : float
        The weight of the quadratic part, ``>= 0`` (0: a flat ``d0``-dimensional subspace).
    noise : float
        The standard deviation of the isotropic noise, ``>= 0``.
    seed : int
        Seed of the draw.

    Returns
    -------
    Manifold
        The tokens, their prompts and ``d0``.

    Raises
    ------
    InvalidInputError
        For counts that are not positive integers, ``d`` below ``d0 + d0 (d0 + 1) / 2``, or ``rho``,
        ``curvature`` or ``noise`` out of range.

    Examples
    --------
    Without noise a flat manifold spans ``d0`` dimensions, a curved one ``d0 + d0 (d0 + 1) / 2`` (its
    quadratic products), and noise fills all ``d``:

    >>> import numpy as np
    >>> from latentbook.analysis import synthetic
    >>> [
    ...     int(np.linalg.matrix_rank(synthetic.curved_manifold(50, 4, 2, 10, curvature=c, noise=s).x))
    ...     for c, s in ((0.0, 0.0), (0.5, 0.0), (0.5, 0.1))
    ... ]
    [2, 5, 10]
    """
    n_prompts, m = (
        _positive_int("n_prompts", n_prompts),
        _positive_int("tokens_per_prompt", tokens_per_prompt),
    )
    d0, d = _positive_int("dimension", dimension), _positive_int("d", d)
    n_quadratic = d0 * (d0 + 1) // 2
    if d < d0 + n_quadratic:
        raise InvalidInputError(f"d must be at least d0 + d0 (d0 + 1) / 2 = {d0 + n_quadratic}, got {d}.")
    if not 0.0 <= rho < 1.0 or curvature < 0 or noise < 0:
        raise InvalidInputError("Need 0 <= rho < 1, curvature >= 0 and noise >= 0.")
    rng = np.random.default_rng(seed)
    shared = np.repeat(rng.standard_normal((n_prompts, d0)), m, axis=0)
    z = np.sqrt(rho) * shared + np.sqrt(1.0 - rho) * rng.standard_normal((n_prompts * m, d0))
    basis = random_orthonormal(d, d0 + n_quadratic, rng)  # (d, d0 + n_quadratic)
    upper = np.triu_indices(d0)
    quadratic = (z[:, :, None] * z[:, None, :])[:, upper[0], upper[1]]
    x = z @ basis[:, :d0].T + curvature * quadratic @ basis[:, d0:].T / np.sqrt(d0)
    x = x + noise * rng.standard_normal(x.shape)
    return Manifold(x, np.repeat(np.arange(n_prompts), m), d0)


@dataclass(frozen=True)
class Mixture:
    """Tokens of a k-prototype mixture: ``x = prototypes[labels] + noise``.

    Attributes
    ----------
    x : numpy.ndarray
        The tokens, shape ``(n, d)``.
    labels : numpy.ndarray
        The prototype of each token, ints in ``0..k-1``, shape ``(n,)``.
    prototypes : numpy.ndarray
        The prototypes, shape ``(k, d)``.
    sigma2 : float
        The noise variance.
    signal_eigenvalue : float
        Each of the ``k - 1`` nonzero eigenvalues of the between-class covariance, ``r^2 / k``.

    Examples
    --------
    ``mixture`` returns one:

    >>> from latentbook.analysis import synthetic
    >>> mix = synthetic.mixture(n=12, d=5, k=3, separation=2.0)
    >>> mix.x.shape, sorted(set(mix.labels.tolist())), mix.prototypes.shape, mix.sigma2
    ((12, 5), [0, 1, 2], (3, 5), 1.0)
    """

    x: np.ndarray  # (n, d)
    labels: np.ndarray  # (n,) ints in 0..k-1
    prototypes: np.ndarray  # (k, d)
    sigma2: float
    signal_eigenvalue: float  # each of the k-1 nonzero eigenvalues of the between-class covariance


def mixture(n: int, d: int, k: int, separation: float, sigma2: float = 1.0, seed: int = 0) -> Mixture:
    """``k`` equiprobable prototypes ``separation * sqrt(sigma2)`` apart, plus ``N(0, sigma2 I)``.

    Prototypes are ``r e_i`` for ``k`` random orthonormal ``e_i`` with ``r = separation sqrt(sigma2 / 2)``, so
    every pair is ``separation`` noise standard deviations apart. The between-class covariance
    ``(r^2/k)(I_k - J/k)`` (in the prototype basis, equal weights) has exactly ``k - 1`` nonzero eigenvalues,
    all ``r^2 / k``: the population covariance is isotropic noise plus ``k - 1`` spikes at
    ``sigma2 + r^2/k`` (Theorem 6.3: at most ``k - 1`` signal eigenvalues). Labels are balanced
    (``n // k`` or one more each), then shuffled.
    Introduced in: chapter 6.

    Parameters
    ----------
    n : int
        The number of tokens.
    d : int
        Their dimension, at least ``k``.
    k : int
        The number of prototypes.
    separation : float
        The distance between two prototypes, in noise standard deviations, ``>= 0``.
    sigma2 : float
        The noise variance, positive.
    seed : int
        Seed of the draw.

    Returns
    -------
    Mixture
        The tokens, their labels, the prototypes, ``sigma2`` and the between-class eigenvalue ``r^2 / k``.

    Raises
    ------
    InvalidInputError
        For counts that are not positive integers, ``sigma2`` not positive and finite, ``separation`` negative
        or not finite, or ``k > d``.

    Examples
    --------
    Balanced labels, every pair of prototypes ``separation sqrt(sigma2) = 4 sqrt 2`` apart, and the
    between-class eigenvalue ``separation^2 sigma2 / (2 k) = 16/3``:

    >>> import numpy as np
    >>> from latentbook.analysis import synthetic
    >>> mix = synthetic.mixture(n=300, d=20, k=3, separation=4.0, sigma2=2.0)
    >>> np.bincount(mix.labels).tolist(), round(float(mix.signal_eigenvalue), 3)
    ([100, 100, 100], 5.333)
    >>> distances = np.linalg.norm(mix.prototypes[:, None] - mix.prototypes[None], axis=-1)
    >>> bool(np.allclose(distances[~np.eye(3, dtype=bool)], 4.0 * np.sqrt(2.0)))
    True
    """
    n, d, k = _positive_int("n", n), _positive_int("d", d), _positive_int("k", k)
    sigma2 = _positive("sigma2", sigma2)
    if not np.isfinite(separation) or separation < 0:
        raise InvalidInputError(f"separation must be a finite number >= 0, got {separation!r}.")
    rng = np.random.default_rng(seed)
    r = float(separation) * np.sqrt(sigma2 / 2.0)
    prototypes = r * random_orthonormal(d, k, rng).T
    labels = rng.permutation(np.arange(n) % k)
    x = prototypes[labels] + rng.standard_normal((n, d)) * np.sqrt(sigma2)
    return Mixture(x, labels, prototypes, sigma2, r**2 / k)


@dataclass(frozen=True)
class Chain:
    """States of a linear depth chain ``h^(l+1) = A h^(l) + eps^(l)``, with ``A`` planted.

    Attributes
    ----------
    states : numpy.ndarray
        The same tokens at every step, shape ``(n_steps + 1, n, d)``.
    q : float
        The transverse contraction factor per step.
    signal_basis : numpy.ndarray
        Orthonormal ``(d, k_signal)``: the relevant subspace, kept (factor 1).
    transverse_basis : numpy.ndarray
        Orthonormal ``(d, d - k_signal)``: its complement, contracted by ``q``.
    maps : numpy.ndarray
        The map ``A``, shape ``(d, d)``, the same at every step.

    Examples
    --------
    ``contraction_chain`` returns one:

    >>> from latentbook.analysis import synthetic
    >>> chain = synthetic.contraction_chain(n=50, d=6, n_steps=3, q=0.5, k_signal=2)
    >>> chain.states.shape, chain.q, chain.signal_basis.shape, chain.transverse_basis.shape, chain.maps.shape
    ((4, 50, 6), 0.5, (6, 2), (6, 4), (6, 6))
    """

    states: np.ndarray  # (n_steps + 1, n, d)
    q: float  # transverse contraction factor per step
    signal_basis: np.ndarray  # (d, k_signal) orthonormal: the relevant subspace, kept (factor 1)
    transverse_basis: np.ndarray  # (d, d - k_signal) orthonormal complement, contracted by q
    maps: np.ndarray  # (d, d) the map A (same at every step)


def contraction_chain(
    n: int,
    d: int,
    n_steps: int,
    q: float,
    k_signal: int = 4,
    noise: float = 0.0,
    signal_scale: float = 3.0,
    seed: int = 0,
) -> Chain:
    """A chain whose map keeps a ``k_signal``-dim subspace and contracts its complement by ``q`` per step.

    ``A = U_s R U_s^T + q U_t O U_t^T`` with random orthonormal ``[U_s, U_t]`` and random rotations ``R, O``
    inside each subspace, so ``A`` is not diagonal in the coordinates; ``h^(0)`` has variance
    ``signal_scale^2`` along the signal subspace and 1 transversally; ``eps ~ N(0, noise^2 I)``.
    Without noise the transverse covariance after ``n`` steps is ``q^(2n)`` times its start (Theorem 6.1).
    Introduced in: chapter 5.

    Parameters
    ----------
    n : int
        The number of tokens.
    d : int
        Their dimension.
    n_steps : int
        The steps of the chain (``n_steps + 1`` depths).
    q : float
        The transverse factor per step, ``>= 0``.
    k_signal : int
        The dimension of the kept subspace, below ``d``.
    noise : float
        The standard deviation of ``eps``, ``>= 0``.
    signal_scale : float
        The standard deviation of ``h^(0)`` along the signal subspace.
    seed : int
        Seed of the draw.

    Returns
    -------
    Chain
        The states, ``q``, the two bases and the map.

    Raises
    ------
    InvalidInputError
        For counts that are not positive integers, ``k_signal >= d``, or a negative ``q`` or ``noise``.

    Examples
    --------
    ``A`` acts on the transverse subspace with every singular value ``q`` and keeps the signal one; without
    noise the transverse variance falls by exactly ``q^2`` per step:

    >>> import numpy as np
    >>> from latentbook.analysis import synthetic
    >>> chain = synthetic.contraction_chain(n=200, d=10, n_steps=3, q=0.5, k_signal=2)
    >>> t, s = chain.transverse_basis, chain.signal_basis
    >>> np.linalg.svd(t.T @ chain.maps @ t, compute_uv=False).round(3).tolist()
    [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    >>> np.linalg.svd(s.T @ chain.maps @ s, compute_uv=False).round(3).tolist()
    [1.0, 1.0]
    >>> variance = np.array([np.var(h @ t, axis=0).sum() for h in chain.states])
    >>> (variance / variance[0]).round(4).tolist()
    [1.0, 0.25, 0.0625, 0.0156]
    """
    n, d, n_steps = _positive_int("n", n), _positive_int("d", d), _positive_int("n_steps", n_steps)
    k_signal = _positive_int("k_signal", k_signal)
    if k_signal >= d:
        raise InvalidInputError(f"k_signal={k_signal} must be below d={d} so a transverse subspace remains.")
    if not 0 <= q < np.inf or noise < 0:
        raise InvalidInputError(f"Need q >= 0 and noise >= 0, got q={q!r}, noise={noise!r}.")
    rng = np.random.default_rng(seed)
    basis = random_orthonormal(d, d, rng)
    u_s, u_t = basis[:, :k_signal], basis[:, k_signal:]
    rot_s = random_orthonormal(k_signal, k_signal, rng)
    rot_t = random_orthonormal(d - k_signal, d - k_signal, rng)
    a = u_s @ rot_s @ u_s.T + q * (u_t @ rot_t @ u_t.T)
    h = (
        signal_scale * rng.standard_normal((n, k_signal)) @ u_s.T
        + rng.standard_normal((n, d - k_signal)) @ u_t.T
    )
    states = np.empty((n_steps + 1, n, d))
    states[0] = h
    for step in range(1, n_steps + 1):
        states[step] = states[step - 1] @ a.T + noise * rng.standard_normal((n, d))
    return Chain(states, float(q), u_s, u_t, a)


def sigmoid_profile(
    gamma: np.ndarray, gamma_c: float, width: float, amplitude: float, base: float
) -> np.ndarray:
    """``m(gamma) = base + amplitude / (1 + exp(-(gamma - gamma_c) / width))`` (the transition model).

    Parameters
    ----------
    gamma : numpy.ndarray
        The depths.
    gamma_c : float
        The midpoint of the transition.
    width : float
        Its width (nonzero).
    amplitude : float
        The rise from ``base`` to the far side.
    base : float
        The level before the transition.

    Returns
    -------
    numpy.ndarray
        ``m(gamma)``, the shape of ``gamma``.

    Examples
    --------
    ``base`` well before the transition, ``base + amplitude / 2`` at ``gamma_c``, ``base + amplitude`` after:

    >>> import numpy as np
    >>> from latentbook.analysis import synthetic
    >>> synthetic.sigmoid_profile(np.array([0.0, 0.42, 1.0]), 0.42, 0.03, 0.2, 0.69).round(3).tolist()
    [0.69, 0.79, 0.89]
    """
    z = np.clip((np.asarray(gamma, dtype=np.float64) - gamma_c) / width, -500, 500)
    return base + amplitude / (1.0 + np.exp(-z))


@dataclass(frozen=True)
class Curve:
    """An order-parameter curve ``m(gamma)`` with its planted transition.

    Attributes
    ----------
    gamma : numpy.ndarray
        The depths ``l / n_layers``, ``l = 0..n_layers``.
    m : numpy.ndarray
        The curve at those depths.
    gamma_c, width, amplitude, base : float
        The planted ``sigmoid_profile``.
    noise : float
        The standard deviation of the noise added.

    Examples
    --------
    ``order_parameter_curve`` returns one:

    >>> from latentbook.analysis import synthetic
    >>> curve = synthetic.order_parameter_curve(n_layers=10)
    >>> curve.gamma.shape, curve.m.shape, curve.gamma_c, curve.amplitude, curve.noise
    ((11,), (11,), 0.42, 0.2, 0.01)
    """

    gamma: np.ndarray
    m: np.ndarray
    gamma_c: float
    width: float
    amplitude: float
    base: float
    noise: float


def order_parameter_curve(
    gamma_c: float = 0.42,
    width: float = 0.03,
    amplitude: float = 0.2,
    base: float = 0.69,
    noise: float = 0.01,
    n_layers: int = 40,
    seed: int = 0,
) -> Curve:
    """``m(gamma_l) = sigmoid_profile(gamma_l) + N(0, noise^2)`` at ``gamma_l = l / n_layers``, ``l = 0..L``.

    ``amplitude = 0`` gives a flat curve (no transition). Defaults echo the paper's claim 1
    (m from ~0.69 to ~0.89 at gamma_c ~ 0.42).
    Introduced in: chapter 3.

    Parameters
    ----------
    gamma_c : float
        The midpoint of the transition, in ``[0, 1]``.
    width : float
        Its width, positive.
    amplitude : float
        The rise across it (0: no transition).
    base : float
        The level before it.
    noise : float
        The standard deviation of the Gaussian noise, ``>= 0``.
    n_layers : int
        ``L``; the curve has ``L + 1`` depths.
    seed : int
        Seed of the noise.

    Returns
    -------
    Curve
        The depths, the curve and the planted parameters.

    Raises
    ------
    InvalidInputError
        For ``n_layers`` not a positive integer, ``gamma_c`` outside ``[0, 1]``, a ``width`` not positive, or
        negative ``noise``.

    Examples
    --------
    Without noise the curve is the sigmoid itself; ``amplitude = 0`` gives a flat curve:

    >>> import numpy as np
    >>> from latentbook.analysis import synthetic
    >>> clean = synthetic.order_parameter_curve(noise=0.0)
    >>> bool(np.allclose(clean.m, synthetic.sigmoid_profile(clean.gamma, 0.42, 0.03, 0.2, 0.69)))
    True
    >>> round(float(clean.m[0]), 2), round(float(clean.m[-1]), 2)
    (0.69, 0.89)
    >>> np.unique(synthetic.order_parameter_curve(amplitude=0.0, noise=0.0).m).tolist()
    [0.69]
    """
    n_layers = _positive_int("n_layers", n_layers)
    if not 0.0 <= gamma_c <= 1.0:
        raise InvalidInputError(f"gamma_c must lie in [0, 1], got {gamma_c!r}.")
    width = _positive("width", width)
    if noise < 0:
        raise InvalidInputError(f"noise must be >= 0, got {noise!r}.")
    rng = np.random.default_rng(seed)
    gamma = np.arange(n_layers + 1) / n_layers
    m = sigmoid_profile(gamma, gamma_c, width, amplitude, base) + noise * rng.standard_normal(gamma.shape)
    return Curve(gamma, m, float(gamma_c), width, float(amplitude), float(base), float(noise))


# --- sequences and labelled reasoning states (flow.py, classes.py) ---------------------------------------


def correlated_sequences(n_prompts: int, length: int, d: int, rho: float, seed: int = 0) -> np.ndarray:
    """Token vectors along positions with correlation ``rho^r`` at distance ``r``, shape ``(n_prompts, length, d)``.

    A stationary AR(1) chain per prompt: ``h_0 ~ N(0, I)``, ``h_(t+1) = rho h_t + sqrt(1 - rho^2) eps_t``, so
    ``E[h_t . h_(t+r)] / d = rho^r`` and the correlation length is ``-1 / log rho``.
    Introduced in: chapter 5.

    Parameters
    ----------
    n_prompts : int
        The number of sequences.
    length : int
        The positions of each.
    d : int
        The dimension.
    rho : float
        The correlation at distance 1, in ``[0, 1)``.
    seed : int
        Seed of the draw.

    Returns
    -------
    numpy.ndarray
        The token vectors, shape ``(n_prompts, length, d)``.

    Raises
    ------
    InvalidInputError
        For counts that are not positive integers, or ``rho`` outside ``[0, 1)``.

    Examples
    --------
    Unit variance, and ``E[h_t . h_(t+r)] / d`` near ``0.6^r``:

    >>> import numpy as np
    >>> from latentbook.analysis import synthetic
    >>> h = synthetic.correlated_sequences(n_prompts=200, length=10, d=32, rho=0.6)
    >>> h.shape, round(float(h.var()), 1)
    ((200, 10, 32), 1.0)
    >>> lagged = np.array([np.mean(h[:, :-r] * h[:, r:]) for r in (1, 2, 3)])
    >>> bool(np.allclose(lagged, 0.6 ** np.arange(1, 4), atol=0.02))
    True
    """
    n_prompts, length = _positive_int("n_prompts", n_prompts), _positive_int("length", length)
    d = _positive_int("d", d)
    if not 0 <= rho < 1:
        raise InvalidInputError(f"rho must lie in [0, 1), got {rho!r}.")
    rng = np.random.default_rng(seed)
    eps = rng.standard_normal((n_prompts, length, d))
    h = np.empty_like(eps)
    h[:, 0] = eps[:, 0]
    for t in range(1, length):
        h[:, t] = rho * h[:, t - 1] + np.sqrt(1 - rho**2) * eps[:, t]
    return h


@dataclass(frozen=True)
class LabelledStates:
    """Token states of labelled items at several reasoning steps and depths (the layout of ``token_states``).

    Attributes
    ----------
    states : numpy.ndarray
        The token states, shape ``(n_items * n_steps, n_depths, d)``, item after item.
    labels : numpy.ndarray
        The class of each token, the same for every token of an item.
    steps : numpy.ndarray
        The reasoning step of each token.
    items : numpy.ndarray
        The item each token belongs to.
    prototypes : numpy.ndarray
        The unit class directions, shape ``(k, d)``.

    Examples
    --------
    ``class_trajectories`` returns one, item after item and step after step:

    >>> from latentbook.analysis import synthetic
    >>> labelled = synthetic.class_trajectories(n_items=3, n_steps=2, n_depths=4, d=8, k=2)
    >>> labelled.states.shape, labelled.steps.tolist(), labelled.items.tolist(), labelled.prototypes.shape
    ((6, 4, 8), [0, 1, 0, 1, 0, 1], [0, 0, 1, 1, 2, 2], (2, 8))
    """

    states: np.ndarray  # (n_items * n_steps, n_depths, d)
    labels: np.ndarray  # (n_items * n_steps,) class of each token, fixed per item
    steps: np.ndarray  # (n_items * n_steps,) reasoning step of each token
    items: np.ndarray  # (n_items * n_steps,) item each token belongs to
    prototypes: np.ndarray  # (k, d)


def class_trajectories(
    n_items: int,
    n_steps: int,
    n_depths: int,
    d: int,
    k: int,
    separation: float | np.ndarray = 4.0,
    persistent: bool = True,
    seed: int = 0,
) -> LabelledStates:
    """Each item carries a class through ``n_steps`` steps: ``h = r(l) e_c + N(0, I)``, ``r(l) = sep(l)/sqrt(2)``.

    ``separation`` (a number or one per depth) is the distance between prototypes in noise units, as in
    ``mixture``. With ``persistent=True`` the item's class ``c`` shows at every step (a Transient Class
    Object: class stability 1 for large separation); with ``persistent=False`` steps after 0 show an
    independent random class, so centroids fitted at step 0 predict later steps at chance (``1/k``).
    Introduced in: chapter 6.

    Parameters
    ----------
    n_items : int
        The number of items (each a class, balanced over the ``k`` classes).
    n_steps : int
        The reasoning steps of each item.
    n_depths : int
        The depths of each token.
    d : int
        The dimension, at least ``k``.
    k : int
        The number of classes.
    separation : float or numpy.ndarray
        The distance between prototypes in noise units, one number or one per depth, ``>= 0``.
    persistent : bool
        Whether the item's class shows at every step (True) or only at step 0 (False).
    seed : int
        Seed of the draw.

    Returns
    -------
    LabelledStates
        The states, labels, steps, items and prototypes.

    Raises
    ------
    InvalidInputError
        For counts that are not positive integers, a negative or infinite ``separation``, or ``k > d``.

    Examples
    --------
    An item's class is fixed across its steps, the classes are balanced, and a token lies ``sep / sqrt 2``
    along its class's prototype (up to the noise):

    >>> import numpy as np
    >>> from latentbook.analysis import synthetic
    >>> labelled = synthetic.class_trajectories(n_items=300, n_steps=2, n_depths=3, d=16, k=3, separation=4.0)
    >>> bool(np.all(labelled.labels[0::2] == labelled.labels[1::2])), np.bincount(labelled.labels).tolist()
    (True, [200, 200, 200])
    >>> along = np.einsum("ntd,nd->nt", labelled.states, labelled.prototypes[labelled.labels])
    >>> bool(abs(along.mean() - 4.0 / np.sqrt(2.0)) < 0.1)
    True
    """
    n_items, n_steps = _positive_int("n_items", n_items), _positive_int("n_steps", n_steps)
    n_depths, d, k = _positive_int("n_depths", n_depths), _positive_int("d", d), _positive_int("k", k)
    sep = np.broadcast_to(np.asarray(separation, dtype=np.float64), (n_depths,))
    if np.any(sep < 0) or not np.all(np.isfinite(sep)):
        raise InvalidInputError(f"separation must be finite and >= 0, got {separation!r}.")
    rng = np.random.default_rng(seed)
    prototypes = random_orthonormal(d, k, rng).T
    labels = rng.permutation(np.arange(n_items) % k)
    shown = np.repeat(labels[:, None], n_steps, axis=1)
    if not persistent:
        shown[:, 1:] = rng.integers(0, k, size=(n_items, n_steps - 1))
    signal = prototypes[shown][:, :, None, :] * (sep / np.sqrt(2.0))[None, None, :, None]
    states = signal + rng.standard_normal((n_items, n_steps, n_depths, d))
    return LabelledStates(
        states.reshape(n_items * n_steps, n_depths, d),
        np.repeat(labels, n_steps),
        np.tile(np.arange(n_steps), n_items),
        np.repeat(np.arange(n_items), n_steps),
        prototypes,
    )


# --- programs with a known binding code (tco.py) ----------------------------------------------------------

BINDING_CODES = ("stable", "per step", "bag", "first value", "none")  # planted_binding's codes


@dataclass(frozen=True)
class PlantedBinding:
    """Token states of planted programs and what each token is (as ``capturing.states.TokenStates``).

    Attributes
    ----------
    states : numpy.ndarray
        float32 token states, shape ``(n_tokens, n_depths, d)``, program after program.
    labels : numpy.ndarray
        The value bound to each token (its chain's value), shape ``(n_tokens,)``.
    steps : numpy.ndarray
        The step of each token: 0 the value, ``1..n_hops`` the hops, ``n_hops + 1`` the query.
    items : numpy.ndarray
        The program of each token.
    written : list of list of int
        Each program's values in the order they are written.
    query_step : int
        The step of the query token, ``n_hops + 1``.
    hop_steps : tuple of int
        The steps of the hops, ``1..n_hops``.
    code : str
        The planted value code (one of ``BINDING_CODES``).

    Examples
    --------
    ``planted_binding`` returns one; each program has ``n_chains (n_hops + 1) + 1 = 13`` tokens:

    >>> import numpy as np
    >>> from latentbook.analysis import synthetic
    >>> planted = synthetic.planted_binding(np.random.default_rng(0), "stable", n_programs=4, d=16)
    >>> planted.states.shape, planted.states.dtype, planted.steps[:13].tolist()
    ((52, 8, 16), dtype('float32'), [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 4])
    >>> planted.query_step, planted.hop_steps, planted.code, len(planted.written)
    (4, (1, 2, 3), 'stable', 4)
    """

    states: np.ndarray  # (n_tokens, n_depths, d)
    labels: np.ndarray
    steps: np.ndarray
    items: np.ndarray
    written: list[list[int]]
    query_step: int
    hop_steps: tuple[int, ...]
    code: str


def planted_binding(
    rng: np.random.Generator,
    code: str,
    n_programs: int = 160,
    n_values: int = 8,
    n_chains: int = 3,
    n_hops: int = 3,
    n_depths: int = 8,
    d: int = 64,
    strength: float = 3.0,
    onset: float = 0.3,
    bag: float = 1.0,
    program_noise: float = 1.0,
) -> PlantedBinding:
    """Programs of ``n_chains`` chains (values drawn from ``n_values``, shared values allowed), each with a token
    at its value (step 0), at ``n_hops`` hops (steps ``1..n_hops``), and a query for chain 0 (step ``n_hops + 1``).

    Every token: isotropic noise + a program offset shared by its tokens (``program_noise``) + a bag of the
    program's values (``bag``, what a model that averages over the prompt carries) + its own token identity (the
    digit's embedding at step 0, a random name vector elsewhere) + one massive coordinate; and a value code of norm
    ``strength`` (rising from 0 at ``gamma = onset`` to full strength halfway from there to the last depth), per
    ``code``:

    - ``"stable"``: the token's bound value in one code at every step (a Transient Class Object);
    - ``"per step"``: the bound value, but in a code of its own at each step (decodable within a step, no
      stability across steps);
    - ``"bag"``: nothing beyond the bag of values; ``"first value"``: the first value written, at every token
      (a positional shortcut); ``"none"``: no code at all.

    Parameters
    ----------
    rng : numpy.random.Generator
        The random generator drawn from.
    code : str
        The value code, one of ``BINDING_CODES``.
    n_programs : int
        The number of programs.
    n_values : int
        The values a chain can hold.
    n_chains : int
        The chains of each program.
    n_hops : int
        The hops of each chain.
    n_depths : int
        The depths of each token.
    d : int
        The dimension, at least ``n_values``.
    strength : float
        The norm of the value code at full strength.
    onset : float
        The depth fraction ``gamma`` at which the code starts to rise.
    bag : float
        The weight of the bag of the program's values.
    program_noise : float
        The standard deviation of the program offset.

    Returns
    -------
    PlantedBinding
        The states and what each token is.

    Raises
    ------
    InvalidInputError
        For a ``code`` not in ``BINDING_CODES``.

    Examples
    --------
    The query token carries chain 0's value; with the ``"stable"`` code a nearest-centroid classifier reads
    the hops' values at the last depth (chance is 1/8), with ``"none"`` it stays near chance:

    >>> import numpy as np
    >>> from latentbook.analysis import classes, synthetic
    >>> for code in ("stable", "none"):
    ...     p = synthetic.planted_binding(np.random.default_rng(0), code, n_programs=40, d=32)
    ...     hops = np.isin(p.steps, p.hop_steps)
    ...     accuracy = classes.nearest_centroid_accuracy(p.states[hops, -1], p.labels[hops], p.items[hops])
    ...     query_is_chain_0 = bool(np.all(p.labels[p.steps == p.query_step] == p.labels[p.steps == 0][::3]))
    ...     print(code, query_is_chain_0, bool(accuracy > 0.5), bool(accuracy < 0.3))
    stable True True False
    none True False True
    """
    if code not in BINDING_CODES:
        raise InvalidInputError(f"code must be one of {BINDING_CODES}, got {code!r}.")
    query_step = n_hops + 1

    def codebook():
        q, _ = np.linalg.qr(rng.standard_normal((d, n_values)))
        return q.T  # (n_values, d), orthonormal rows

    digit, bag_code = codebook(), codebook()
    stable = codebook()
    value_code = np.stack([stable if code != "per step" else codebook() for _ in range(query_step + 1)])
    ramp = np.clip((np.arange(n_depths) / max(n_depths - 1, 1) - onset) / max(1 - onset, 1e-9) * 2, 0, 1)
    chain_of = np.r_[np.repeat(np.arange(n_chains), query_step), 0]  # every chain's steps, then the query
    step_of = np.r_[np.tile(np.arange(query_step), n_chains), query_step]
    values = rng.integers(0, n_values, (n_programs, n_chains))
    order = np.argsort(
        rng.random((n_programs, n_chains)), axis=1
    )  # the order the chains' values are written in
    written = np.take_along_axis(values, order, axis=1)
    labels = values[:, chain_of]  # (programs, tokens)
    f32 = np.float32
    x = rng.standard_normal((n_programs, len(chain_of), n_depths, d), dtype=f32)
    x += (program_noise * rng.standard_normal((n_programs, 1, 1, d))).astype(f32)
    x += (bag * bag_code[values].sum(1))[:, None, None, :].astype(f32)  # the bag counts repeated values
    identity = 2.0 * rng.standard_normal((n_programs, len(chain_of), d)) / np.sqrt(d)
    identity[:, step_of == 0] = 2.0 * digit[labels[:, step_of == 0]]
    x += identity[:, :, None, :].astype(f32)
    shown = {"stable": labels, "per step": labels, "first value": np.repeat(written[:, :1], len(chain_of), 1)}
    if code in shown:
        planted = value_code[step_of[None, :], shown[code]]  # (programs, tokens, d)
        x += (strength * ramp[None, None, :, None] * planted[:, :, None, :]).astype(f32)
    x[..., 0] += 30.0  # a massive coordinate, the same in every token
    n_tokens = len(chain_of)
    return PlantedBinding(
        x.reshape(n_programs * n_tokens, n_depths, d),
        labels.reshape(-1),
        np.tile(step_of, n_programs),
        np.repeat(np.arange(n_programs), n_tokens),
        written.tolist(),
        query_step,
        tuple(range(1, query_step)),
        code,
    )


# --- a Capture of planted tokens ---------------------------------------------------------------------------


def as_capture(
    states: np.ndarray,
    prompt_ids: np.ndarray | None = None,
    positions: np.ndarray | None = None,
    name: str = "synthetic",
    n_vectors: int = 512,
    n_omega_samples: int = 4096,
) -> Capture:
    """A ``Capture`` of given token vectors, ``states`` of shape ``(n_depths, n_tokens, d)`` (depth ``l`` at
    ``gamma = l / (n_depths - 1)``), built with the same accumulators and token reservoirs as ``lb.capture``.

    ``prompt_ids`` and ``positions`` (one per token) default to one prompt per token at position 0; the
    provenance records ``prompts_done`` (the number of distinct prompts) and ``synthetic: True``.
    Introduced in: chapter 3 (null models through the real pipeline).

    Parameters
    ----------
    states : numpy.ndarray
        The token vectors, shape ``(n_depths, n_tokens, d)`` with ``n_depths >= 2``.
    prompt_ids : numpy.ndarray, optional
        The prompt of each token; None: one prompt per token.
    positions : numpy.ndarray, optional
        The position of each token in its prompt; None: 0 for every token.
    name : str
        The model name recorded.
    n_vectors : int
        The size of the token-vector reservoir.
    n_omega_samples : int
        The size of the per-token Omega reservoir.

    Returns
    -------
    Capture
        The capture, of ``n_layers = n_depths - 1`` and ``d_model = d``.

    Raises
    ------
    InvalidInputError
        For states not ``(n_depths >= 2, n_tokens, d)``, or prompt ids or positions not one per token.

    Examples
    --------
    The capture's statistics are those of the tokens given:

    >>> import numpy as np
    >>> import latentbook as lb
    >>> from latentbook.analysis import synthetic
    >>> x = synthetic.gaussian(600, 8).reshape(3, 200, 8)
    >>> cap = synthetic.as_capture(x, np.repeat(np.arange(50), 4), np.tile(np.arange(4), 50), n_vectors=100)
    >>> cap.n_layers, cap.d_model, cap.n_tokens, cap.gamma.tolist(), cap.provenance["prompts_done"]
    (2, 8, 200, [0.0, 0.5, 1.0], 50)
    >>> bool(np.allclose(cap.covariance(1), np.cov(x[1], rowvar=False, bias=True), atol=1e-5))
    True
    >>> bool(np.allclose(cap.omega_mean(), lb.omega(x).mean(1), atol=1e-5)), cap.token_vectors(2).shape
    (True, (100, 8))
    """
    import torch

    from ..capturing.accumulators import LayerStats, TokenReservoir, token_keys
    from ..capturing.results import Capture

    x = np.asarray(states)
    if x.ndim != 3 or x.shape[0] < 2 or x.shape[1] < 1:
        raise InvalidInputError(f"states must have shape (n_depths >= 2, n_tokens, d), got {x.shape}.")
    n_depths, n, d = x.shape
    ids = np.arange(n) if prompt_ids is None else np.asarray(prompt_ids, dtype=np.int64)
    pos = np.zeros(n, dtype=np.int64) if positions is None else np.asarray(positions, dtype=np.int64)
    if ids.shape != (n,) or pos.shape != (n,):
        raise InvalidInputError(f"prompt_ids and positions need one entry per token ({n}).")
    tensor = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
    layers = [LayerStats(d) for _ in range(n_depths)]
    omega = torch.stack([stats.add(tensor[depth]) for depth, stats in enumerate(layers)])
    keys = token_keys(ids, pos)
    vectors = TokenReservoir(n_vectors, n_depths, d)
    vectors.offer(keys, ids, pos, tensor)
    omega_sample = TokenReservoir(n_omega_samples, n_depths, 1)
    omega_sample.offer(keys, ids, pos, omega[..., None])
    provenance = {"model": name, "prompts_done": len(np.unique(ids)), "synthetic": True}
    return Capture(name, n_depths - 1, d, layers, None, vectors, omega_sample, provenance)
