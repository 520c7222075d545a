"""The RG view of depth: layer-to-layer linear maps, transverse contraction, correlation against token distance.

Theorem 6.1 (book/paper.md): if the linearised dynamics over a depth interval contracts the transverse
("irrelevant") subspace by a factor ``q < 1`` per layer, the transverse covariance decays like ``q^(2n)``
over ``n`` layers. Here:

- ``layer_map(x, y)``: the least-squares linear map ``A`` with ``y - mean(y) ~ A (x - mean(x))`` between the
  same tokens at two depths (``Capture.token_vectors(l)`` holds the same tokens at every depth);
- the *relevant* subspace is the top-``k`` principal subspace of a depth (or the class-centroid subspace
  when labels are given); the *transverse* subspace is its orthogonal complement;
- ``contraction_factor(states, k)``: the per-layer transverse factor ``q`` over a depth interval, by one of
  two documented estimators (``method="map"`` or ``"variance"``);
- ``q_from_block_factors`` (the geometric mean of per-block factors) and ``q_from_variance_decay`` (the slope of
  a log variance profile): the two places the book reads ``q`` from per-block or per-depth numbers;
- ``transverse_variance``: the mean eigenvalue outside the top ``k`` at each depth (decays like ``q^(2n)``);
- ``distance_correlation``: mean cosine of centred token vectors ``r`` positions apart, per depth, and
  ``correlation_length`` from its exponential decay (the RG picture: depth integrates out short-range
  structure and keeps long-range operators).

Introduced in: chapter 5.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError


def _matrix(name: str, x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2:
        raise InvalidInputError(f"{name} must be a 2-d array (n_tokens >= 2, d), got shape {x.shape}.")
    if not np.all(np.isfinite(x)):
        raise InvalidInputError(f"{name} contains NaN or Inf: drop those tokens first.")
    return x


def _states(states) -> np.ndarray:
    states = np.asarray(states, dtype=np.float64)  # pragma: no mutate: float64 before arithmetic
    if states.ndim != 3 or states.shape[0] < 2 or states.shape[1] < 2:
        raise InvalidInputError(
            f"states must have shape (n_depths >= 2, n_tokens >= 2, d): the same tokens at every depth (stack "
            f"Capture.token_vectors(l) over l); got shape {states.shape}."
        )
    return states


def layer_map(x: np.ndarray, y: np.ndarray, ridge: float = 1e-8) -> np.ndarray:
    """Least-squares map ``A`` (``d_y x d_x``) minimising ``sum_i ||(y_i - ybar) - A (x_i - xbar)||^2``.

    ``A^T = (Xc^T Xc + lambda I)^-1 Xc^T Yc`` with ``lambda = ridge * n * trace(C_x) / d_x``: a relative ridge
    (default: numerical only). With fewer tokens than dimensions the plain problem has no unique answer:
    raise ``ridge`` (e.g. 1e-2, shrinking ``A`` towards 0 along poorly sampled directions) or use more tokens.
    Introduced in: chapter 5.

    Parameters
    ----------
    x : numpy.ndarray
        The tokens at the first depth, shape ``(n, d_x)`` with ``n >= 2``, finite.
    y : numpy.ndarray
        The same tokens at the second depth, shape ``(n, d_y)``, finite.
    ridge : float
        The relative ridge (``lambda`` in units of ``n trace(C_x) / d_x``); ``1e-8`` (numerical only) by default.

    Returns
    -------
    numpy.ndarray
        ``A``, shape ``(d_y, d_x)``.

    Raises
    ------
    InvalidInputError
        For arrays that are not 2-D and finite, different token counts, or ``n <= d_x`` with ``ridge <= 1e-6``.

    Examples
    --------
    A planted map is recovered from noiseless tokens, whatever the offset of ``y``; three tokens cannot fix a
    map of four dimensions:

    >>> import numpy as np
    >>> from latentbook.analysis import flow
    >>> rng = np.random.default_rng(0)
    >>> x, a = rng.standard_normal((200, 4)), rng.standard_normal((3, 4))
    >>> m = flow.layer_map(x, x @ a.T + 5.0)
    >>> m.shape, bool(np.allclose(m, a))
    ((3, 4), True)
    >>> flow.layer_map(x[:3], x[:3])
    Traceback (most recent call last):
    ...
    latentbook.errors.InvalidInputError: 3 tokens for a 4-dimensional map: underdetermined. ...
    """
    x, y = _matrix("x", x), _matrix("y", y)
    if x.shape[0] != y.shape[0]:
        raise InvalidInputError(f"x and y must hold the same tokens: {x.shape[0]} vs {y.shape[0]} rows.")
    n, d = x.shape
    if n <= d and ridge <= 1e-6:
        raise InvalidInputError(
            f"{n} tokens for a {d}-dimensional map: underdetermined. Use more tokens (n > d; e.g. a capture "
            "with larger n_vectors) or pass ridge=1e-2 to shrink the unsampled directions."
        )
    xc, yc = x - x.mean(0), y - y.mean(0)  # pragma: no mutate: centring before a centred product
    gram = xc.T @ xc
    lam = ridge * np.trace(gram) / d
    return np.linalg.solve(gram + lam * np.eye(d), xc.T @ yc).T


def principal_basis(x: np.ndarray, k: int) -> np.ndarray:
    """The top-``k`` principal directions of the centred tokens ``x``, orthonormal columns ``(d, k)``.

    Parameters
    ----------
    x : numpy.ndarray
        Tokens, shape ``(n, d)`` with ``n >= 2``, finite.
    k : int
        The number of directions, in ``[0, d)``.

    Returns
    -------
    numpy.ndarray
        Orthonormal columns, shape ``(d, k)``, in the order of decreasing variance.

    Raises
    ------
    InvalidInputError
        For tokens that are not a finite 2-D array, or ``k`` outside ``[0, d)``.

    Examples
    --------
    Tokens spread most along the first coordinate, then along the second:

    >>> import numpy as np
    >>> from latentbook.analysis import flow
    >>> x = np.random.default_rng(0).standard_normal((500, 3)) * np.array([5.0, 1.0, 0.2])
    >>> basis = flow.principal_basis(x, 2)
    >>> basis.shape, bool(np.allclose(basis.T @ basis, np.eye(2)))
    ((3, 2), True)
    >>> bool(abs(basis[0, 0]) > 0.99 and abs(basis[1, 1]) > 0.99)
    True
    """
    x = _matrix("x", x)
    _check_k(k, x.shape[1])
    # equivalent mutants here: svd flags read as booleans
    _, _, vt = np.linalg.svd(x - x.mean(0), full_matrices=False)  # pragma: no mutate
    return vt[:k].T


def class_basis(x: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Orthonormal basis ``(d, c-1)`` of the span of class-centroid differences (the between-class subspace).

    Parameters
    ----------
    x : numpy.ndarray
        Tokens, shape ``(n, d)`` with ``n >= 2``, finite.
    labels : numpy.ndarray
        The class of each token, shape ``(n,)``, with at least two classes.

    Returns
    -------
    numpy.ndarray
        Orthonormal columns, shape ``(d, r)``, ``r`` the rank of the centred centroids (``c - 1`` for ``c``
        classes whose centroids are affinely independent).

    Raises
    ------
    InvalidInputError
        For tokens that are not a finite 2-D array, labels not one per token, or a single class.

    Examples
    --------
    Three classes centred at ``3 e_0``, ``3 e_1`` and 0 in ``R^4`` span the plane of the first two coordinates:

    >>> import numpy as np
    >>> from latentbook.analysis import flow
    >>> labels = np.repeat([0, 1, 2], 5)
    >>> x = np.array([[3.0, 0.0, 0.0, 0.0], [0.0, 3.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])[labels]
    >>> basis = flow.class_basis(x, labels)
    >>> basis.shape, bool(np.allclose(basis @ basis.T, np.diag([1.0, 1.0, 0.0, 0.0])))
    ((4, 2), True)
    """
    x, labels = _matrix("x", x), np.asarray(labels)
    if labels.shape != (x.shape[0],):
        raise InvalidInputError(
            f"labels must have one entry per token ({x.shape[0]}), got shape {labels.shape}."
        )
    classes = np.unique(labels)
    if len(classes) < 2:
        raise InvalidInputError("class_basis needs at least two classes in labels.")
    # equivalent mutants here: the other classes' means
    centroids = np.stack([x[labels == c].mean(0) for c in classes])  # pragma: no mutate
    # equivalent mutants here: svd flags read as booleans, the full U's first columns
    u, s, _ = np.linalg.svd((centroids - centroids.mean(0)).T, full_matrices=False)  # pragma: no mutate
    return u[:, : int(np.sum(s > s[0] * 1e-10))]


def complement(basis: np.ndarray) -> np.ndarray:
    """Orthonormal basis ``(d, d - k)`` of the orthogonal complement of the columns of ``basis`` ``(d, k)``.

    Parameters
    ----------
    basis : numpy.ndarray
        Orthonormal columns, shape ``(d, k)``.

    Returns
    -------
    numpy.ndarray
        Orthonormal columns spanning their complement, shape ``(d, d - k)``.

    Examples
    --------
    >>> import numpy as np
    >>> from latentbook.analysis import flow
    >>> basis = np.array([[1.0], [0.0], [0.0]])
    >>> rest = flow.complement(basis)
    >>> rest.shape, bool(np.allclose(basis.T @ rest, 0.0)), bool(np.allclose(rest.T @ rest, np.eye(2)))
    ((3, 2), True, True)
    """
    basis = np.asarray(basis, dtype=np.float64)  # pragma: no mutate: float64 in the concatenation
    d, k = basis.shape
    q, _ = np.linalg.qr(np.concatenate([basis, np.eye(d)], axis=1))
    return q[:, k:d]


def _check_k(k: int, d: int) -> None:
    if not isinstance(k, (int, np.integer)) or not 0 <= k < d:
        raise InvalidInputError(f"k (the relevant dimensions) must be an integer in [0, {d}), got {k!r}.")


def _transverse(x: np.ndarray, k: int, labels: np.ndarray | None) -> np.ndarray:
    if labels is not None:
        return complement(class_basis(x, labels))
    # equivalent mutants here: the whole space at k = 0
    return complement(principal_basis(x, k)) if k else np.eye(x.shape[1])  # pragma: no mutate


def q_from_block_factors(factors: np.ndarray, axis: int = -1) -> np.ndarray | float:
    """``q = exp(mean_l log f_l)`` over ``axis``: the per-layer factor of the product of the per-block (per-step)
    factors ``f_l``, their geometric mean. A zero factor gives ``q = 0``; a NaN stays NaN. Every estimate of the
    theorem's ``q`` from the factors of single blocks is this one (``contraction_factor``,
    ``contraction.transverse_gain``). Introduced in: chapter 5.

    Parameters
    ----------
    factors : numpy.ndarray
        The per-block factors ``f_l >= 0``.
    axis : int
        The axis of the blocks; the last by default.

    Returns
    -------
    numpy.ndarray or float
        ``q``, the shape of ``factors`` without ``axis`` (a numpy float for 1-D input).

    Examples
    --------
    >>> import numpy as np
    >>> from latentbook.analysis import flow
    >>> round(float(flow.q_from_block_factors(np.array([0.25, 1.0]))), 3)  # sqrt(0.25 * 1)
    0.5
    >>> float(flow.q_from_block_factors(np.array([0.5, 0.0])))  # a zero factor
    0.0
    >>> np.round(flow.q_from_block_factors(np.array([[0.25, 1.0], [0.4, 0.9]])), 3)  # one q per row
    array([0.5, 0.6])
    """
    with np.errstate(divide="ignore"):  # pragma: no mutate: errstate
        return np.exp(np.mean(np.log(factors), axis=axis))


def q_from_variance_decay(layers: np.ndarray, variances: np.ndarray) -> np.ndarray | float:
    """``q = exp(b / 2)``, ``b`` the least-squares slope of ``log v_l`` on the layer ``l`` (over the last axis of
    ``variances``, one row per set of draws): the per-layer factor of a variance that decays like ``v_l ~ q^(2l)``
    (Theorem 6.1), read from every depth of the window, not only its ends. Introduced in: chapter 5.

    Parameters
    ----------
    layers : numpy.ndarray
        The layers ``l`` of the window, 1-D.
    variances : numpy.ndarray
        The variances ``v_l > 0`` along the last axis (the length of ``layers``); leading axes: sets of draws.

    Returns
    -------
    numpy.ndarray or float
        ``q`` for each set of draws, the leading shape of ``variances`` (a numpy float for 1-D input).

    Examples
    --------
    A variance falling like ``3 q^(2l)`` with ``q = 0.7`` gives back 0.7, and so do noisy draws of it:

    >>> import numpy as np
    >>> from latentbook.analysis import flow
    >>> layers = np.arange(6)
    >>> round(float(flow.q_from_variance_decay(layers, 3.0 * 0.7 ** (2 * layers))), 3)
    0.7
    >>> noisy = 0.7 ** (2 * layers) * np.exp(0.05 * np.random.default_rng(0).standard_normal((4, 6)))
    >>> np.round(flow.q_from_variance_decay(layers, noisy), 1)
    array([0.7, 0.7, 0.7, 0.7])
    """
    x = layers - layers.mean()
    log_v = np.log(variances)
    # equivalent mutants here: a constant along centred layers
    slope = np.sum(x * (log_v - log_v.mean(-1, keepdims=True)), axis=-1) / np.sum(x * x)  # pragma: no mutate
    return np.exp(slope / 2)


@dataclass(frozen=True)
class Contraction:
    """Per-layer transverse factor ``q`` over an interval, with the step-by-step factors behind it.

    Attributes
    ----------
    q : float
        The geometric mean of ``per_step`` (``q_from_block_factors``).
    per_step : numpy.ndarray
        ``q_l`` of each step ``l -> l+1`` in ``[start, stop)``.
    start, stop : int
        The first and the last depth of the interval.
    method : str
        The estimator, ``"map"`` or ``"variance"``.

    Examples
    --------
    ``contraction_factor`` returns one; here over depths 1 to 4 of a chain planted with ``q = 0.6``:

    >>> from latentbook.analysis import flow, synthetic
    >>> chain = synthetic.contraction_chain(n=400, d=12, n_steps=4, q=0.6, k_signal=2)
    >>> result = flow.contraction_factor(chain.states, k=2, start=1)
    >>> result.start, result.stop, result.method, result.per_step.shape, round(result.q, 3)
    (1, 4, 'map', (3,), 0.6)
    """

    q: float  # geometric mean of per_step
    per_step: np.ndarray  # q_l for the steps l -> l+1 in [start, stop)
    start: int
    stop: int
    method: str


def contraction_factor(
    states: np.ndarray,
    k: int = 0,
    start: int = 0,
    stop: int | None = None,
    method: str = "map",
    labels: np.ndarray | None = None,
    norm: str = "rms",
    ridge: float = 1e-8,
) -> Contraction:
    """Transverse contraction factor ``q`` per layer over depths ``[start, stop]`` (Theorem 6.1).

    ``states`` is ``(n_depths, n_tokens, d)``, the same tokens at every depth. At each depth ``l`` the
    transverse basis ``T_l`` is the complement of the top-``k`` principal subspace (or of the class subspace
    when ``labels`` are given). Estimators, per step ``l -> l+1``:

    - ``"map"``: ``B_l = T_{l+1}^T A_l T_l`` with ``A_l = layer_map(h^(l), h^(l+1))``, and ``q_l`` its RMS
      singular value ``||B_l||_F / sqrt(d-k)`` (``norm="rms"``) or its largest (``norm="spectral"``, the
      worst-case factor). Unbiased by noise injected between layers (it is not regressed on).
    - ``"variance"``: ``q_l = sqrt(v_{l+1} / v_l)`` with ``v_l`` the transverse variance per dimension
      (``transverse_variance``). Needs no map, but noise injected between layers props ``v`` up.

    ``q`` is the geometric mean of the ``q_l`` (``q_from_block_factors``). Introduced in: chapter 5.

    Parameters
    ----------
    states : numpy.ndarray
        The same tokens at every depth, shape ``(n_depths, n_tokens, d)`` with ``n_depths, n_tokens >= 2``.
    k : int
        The relevant dimensions (the top-``k`` principal subspace), in ``[0, d)``; 0 makes every direction
        transverse.
    start, stop : int
        The interval of depths, ``0 <= start < stop <= n_depths - 1``; ``stop`` None is the last depth.
    method : str
        ``"map"`` or ``"variance"``, as above.
    labels : numpy.ndarray, optional
        The class of each token; given, the relevant subspace is the class subspace (``class_basis``) and ``k``
        is not used for it.
    norm : str
        ``"rms"`` or ``"spectral"``, for ``method="map"``.
    ridge : float
        The relative ridge of ``layer_map``.

    Returns
    -------
    Contraction
        ``q``, the per-step factors, the interval and the method.

    Raises
    ------
    InvalidInputError
        For states of another shape, an interval out of range, an unknown ``method`` or ``norm``, or ``k``
        outside ``[0, d)``.

    Examples
    --------
    A planted chain keeps 2 directions and contracts the other 10 by ``q = 0.6`` per step; both estimators
    read 0.6 at every step:

    >>> import numpy as np
    >>> from latentbook.analysis import flow, synthetic
    >>> chain = synthetic.contraction_chain(n=400, d=12, n_steps=4, q=0.6, k_signal=2)
    >>> result = flow.contraction_factor(chain.states, k=2)
    >>> round(result.q, 3), np.round(result.per_step, 3)
    (0.6, array([0.6, 0.6, 0.6, 0.6]))
    >>> round(flow.contraction_factor(chain.states, k=2, method="variance").q, 3)
    0.6
    """
    states = _states(states)
    n_depths, _, d = states.shape
    stop = n_depths - 1 if stop is None else stop
    if not 0 <= start < stop <= n_depths - 1:
        raise InvalidInputError(f"Need 0 <= start < stop <= {n_depths - 1}, got start={start}, stop={stop}.")
    if method not in ("map", "variance") or norm not in ("rms", "spectral"):
        raise InvalidInputError(
            f"method must be 'map' or 'variance' and norm 'rms' or 'spectral'; got {method!r}, {norm!r}."
        )
    _check_k(k, d)
    bases = [_transverse(states[depth], k, labels) for depth in range(start, stop + 1)]
    steps = []
    for i, depth in enumerate(range(start, stop)):
        t0, t1 = bases[i], bases[i + 1]
        if method == "variance":
            v0 = np.var(states[depth] @ t0, axis=0).mean()
            v1 = np.var(states[depth + 1] @ t1, axis=0).mean()
            steps.append(np.sqrt(v1 / v0))
        else:
            b = t1.T @ layer_map(states[depth], states[depth + 1], ridge) @ t0
            sv = np.linalg.svd(b, compute_uv=False)  # pragma: no mutate: svd flags read as booleans
            steps.append(sv[0] if norm == "spectral" else np.sqrt(np.mean(sv**2)))
    per_step = np.array(steps)
    return Contraction(float(q_from_block_factors(per_step)), per_step, start, stop, method)


def transverse_variance(source, k: int) -> np.ndarray:
    """Transverse variance per dimension at each depth: the mean covariance eigenvalue outside the top ``k``.

    ``source``: a ``Capture`` (all its captured tokens), eigenvalues ``(n_depths, d)`` sorted descending,
    or states ``(n_depths, n_tokens, d)``. Under Theorem 6.1 it decays like ``q^(2n)`` over ``n`` layers.
    Introduced in: chapter 5.

    Parameters
    ----------
    source : Capture or numpy.ndarray
        A ``Capture``, eigenvalues ``(n_depths, d)``, or states ``(n_depths, n_tokens, d)``.
    k : int
        The relevant dimensions left out, in ``[0, d)``.

    Returns
    -------
    numpy.ndarray
        The transverse variance per dimension at each depth, shape ``(n_depths,)``.

    Raises
    ------
    InvalidInputError
        For an array of another rank, or ``k`` outside ``[0, d)``.

    Examples
    --------
    From eigenvalues, the mean of all but the largest ``k``; from the states of a chain planted with
    ``q = 0.6``, a fall by ``q^2 = 0.36`` per layer, read the same from a ``Capture`` of those states:

    >>> import numpy as np
    >>> from latentbook.analysis import flow, synthetic
    >>> flow.transverse_variance(np.array([[5.0, 1.0, 1.0], [4.0, 0.5, 0.5]]), k=1).tolist()
    [1.0, 0.5]
    >>> chain = synthetic.contraction_chain(n=400, d=12, n_steps=4, q=0.6, k_signal=2)
    >>> v = flow.transverse_variance(chain.states, k=2)
    >>> np.round(v[1:] / v[:-1], 2)
    array([0.36, 0.36, 0.36, 0.36])
    >>> bool(np.allclose(flow.transverse_variance(synthetic.as_capture(chain.states), k=2), v, rtol=1e-3))
    True
    """
    if hasattr(source, "all_eigvals"):
        eig = source.all_eigvals()
    else:
        array = np.asarray(source, dtype=np.float64)
        if array.ndim == 3:
            # pragma: no mutate start (np.cov's flags read as booleans, sorted again)
            eig = np.stack([np.linalg.eigvalsh(np.cov(s, rowvar=False, bias=True))[::-1] for s in array])
            # pragma: no mutate end
        elif array.ndim == 2:
            eig = array
        else:
            raise InvalidInputError(
                f"source must be a Capture, eigenvalues (n_depths, d) or states (n_depths, n, d); got {array.shape}."
            )
    _check_k(k, eig.shape[1])
    return np.sort(eig, axis=1)[:, ::-1][:, k:].mean(1)  # pragma: no mutate: the sort's default axis


def distance_correlation(
    hidden: np.ndarray, mask: np.ndarray | None = None, max_distance: int = 16
) -> np.ndarray:
    """Mean cosine of centred token vectors ``r`` positions apart in the same prompt, ``r = 0..max_distance``.

    ``C(r) = mean_{prompts, t} cos(h_t - mu, h_{t+r} - mu)`` over pairs where both positions are real
    (``mask``, ``(n_prompts, T)``), ``mu`` the mean over all real tokens of that depth; ``C(0) = 1``.
    ``hidden`` is ``(n_prompts, T, d)`` for one depth or ``(n_depths, n_prompts, T, d)`` for many (then the
    result is ``(n_depths, max_distance + 1)``). Get such arrays with ``capturing.states.sequence_states``.
    Introduced in: chapter 5.

    Parameters
    ----------
    hidden : numpy.ndarray
        Token vectors ``(n_prompts, T, d)`` of one depth, or ``(n_depths, n_prompts, T, d)``.
    mask : numpy.ndarray, optional
        Boolean ``(n_prompts, T)``, the real positions; None: every position.
    max_distance : int
        The largest distance ``r``, in ``[1, T - 1]``.

    Returns
    -------
    numpy.ndarray
        ``C(r)`` for ``r = 0..max_distance``, shape ``(max_distance + 1,)``, or ``(n_depths, max_distance + 1)``.

    Raises
    ------
    InvalidInputError
        For arrays of another shape, ``max_distance`` outside ``[1, T - 1]``, or a distance at which no prompt
        has two real tokens.

    Examples
    --------
    AR(1) sequences planted with correlation ``0.5^r`` at distance ``r`` (``synthetic.correlated_sequences``):

    >>> import numpy as np
    >>> from latentbook.analysis import flow, synthetic
    >>> h = synthetic.correlated_sequences(n_prompts=200, length=12, d=64, rho=0.5)
    >>> corr = flow.distance_correlation(h, max_distance=4)
    >>> corr.shape, bool(np.allclose(corr, 0.5 ** np.arange(5), atol=0.02))
    ((5,), True)
    >>> flow.distance_correlation(np.stack([h, h]), max_distance=4).shape  # two depths
    (2, 5)
    """
    hidden = np.asarray(hidden, dtype=np.float64)
    if hidden.ndim == 4:
        return np.stack([distance_correlation(h, mask, max_distance) for h in hidden])
    if hidden.ndim != 3:
        raise InvalidInputError(
            f"hidden must be (n_prompts, T, d) or (n_depths, n_prompts, T, d), got {hidden.shape}."
        )
    n, t, _ = hidden.shape
    mask = np.ones((n, t), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if mask.shape != (n, t):
        raise InvalidInputError(f"mask must have shape (n_prompts, T) = {(n, t)}, got {mask.shape}.")
    if not 1 <= max_distance < t:
        raise InvalidInputError(f"max_distance must be in [1, {t - 1}] (T = {t}), got {max_distance}.")
    centred = hidden - hidden[mask].mean(0)
    norms = np.linalg.norm(centred, axis=-1, keepdims=True)
    unit = np.divide(centred, norms, out=np.zeros_like(centred), where=norms > 0)
    out = np.ones(max_distance + 1)
    for r in range(1, max_distance + 1):
        both = mask[:, :-r] & mask[:, r:]
        if not both.any():
            raise InvalidInputError(f"No prompt has two real tokens {r} apart: lower max_distance.")
        out[r] = np.sum(unit[:, :-r] * unit[:, r:], axis=-1)[both].mean()
    return out


def correlation_length(corr: np.ndarray, floor: float = 0.05) -> float | np.ndarray:
    """``xi`` of ``C(r) ~ exp(-r / xi)``: least-squares slope of ``log C(r)`` on ``r`` through the origin.

    Uses ``r >= 1`` up to the first ``C(r) <= floor`` (noise dominates below it). Returns ``inf`` for a
    curve that does not decay and one value per row for ``(n_depths, R)`` input. Introduced in: chapter 5.

    Parameters
    ----------
    corr : numpy.ndarray
        ``C(r)`` for ``r = 0..R`` (``C(0)`` is not used), or one such curve per row, ``(n_depths, R + 1)``.
    floor : float
        The level at and below which ``C(r)`` is not used.

    Returns
    -------
    float or numpy.ndarray
        ``xi`` (``inf`` for a curve that does not decay, 0 when ``C(1) <= floor``), or one per row.

    Examples
    --------
    Exact exponentials give back their length; AR(1) sequences with ``rho = 0.5`` have ``xi = -1 / log 0.5``:

    >>> import numpy as np
    >>> from latentbook.analysis import flow, synthetic
    >>> r = np.arange(11)
    >>> round(flow.correlation_length(np.exp(-r / 3.0)), 3), flow.correlation_length(np.ones(5))
    (3.0, inf)
    >>> flow.correlation_length(np.stack([np.exp(-r / 2.0), np.exp(-r / 4.0)])).round(3).tolist()
    [2.0, 4.0]
    >>> h = synthetic.correlated_sequences(n_prompts=200, length=12, d=64, rho=0.5)
    >>> xi = flow.correlation_length(flow.distance_correlation(h, max_distance=8))
    >>> bool(abs(xi + 1 / np.log(0.5)) < 0.1)
    True
    """
    corr = np.asarray(corr, dtype=np.float64)
    if corr.ndim == 2:
        return np.array([correlation_length(c, floor) for c in corr])
    values = corr[1:]
    below = np.flatnonzero(values <= floor)
    values = values[: below[0]] if len(below) else values
    if len(values) == 0:
        return 0.0
    r = np.arange(1, len(values) + 1)
    slope = np.sum(r * np.log(values)) / np.sum(r * r)
    return float(-1.0 / slope) if slope < 0 else float("inf")  # pragma: no mutate: inf spelling
