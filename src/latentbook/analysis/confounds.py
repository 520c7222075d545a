"""What Omega measures besides "object integrity": the confounds of chapter 3, each measured on a capture.

Omega is not invariant to the choices behind it, and each choice can move it as much as the claimed transition:

- **massive activations** (Sun et al. 2024): a few coordinates 100-1000x larger than the rest make any vector
  look one-hot. ``massive_ratio`` is the largest ``max |h_i|`` over the median coordinate's, per depth;
- **the first position** (the attention sink, Xiao et al. 2024) carries most of those coordinates;
- **centring**: a large shared mean ``mu`` makes every token look like ``mu``; Omega of ``h - mu`` removes it
  (but a mean dominated by a few massive tokens plants their spike, negated, in every other token);
- **the basis**: Omega counts coordinates, so a rotation ``R h`` (same geometry, other axes) sends any vector
  to ``1 - sqrt(2/pi) ~ 0.2021``: Omega measures alignment with the neuron basis, not intrinsic sparsity.

``treatments(cap, layer, k)`` gives mean Omega of the same sampled tokens under each treatment;
``cleaned_profile(cap, k)`` gives ``m(gamma)`` with the confounds removed (centred, first position dropped,
the ``k`` massive coordinates dropped), with the same bootstrap intervals as ``omega_profiles.profile``.
Introduced in: chapter 3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidInputError
from .omega import omega
from .omega_profiles import Profile, profile
from .synthetic import random_orthonormal

if TYPE_CHECKING:
    from ..capturing.results import Capture


def massive_ratio(cap: Capture) -> np.ndarray:
    """``max_i A_i / median_i A_i`` at each depth, with ``A_i = max over tokens |h_i|`` (all captured tokens).

    Parameters
    ----------
    cap : Capture
        The capture whose per-coordinate ``max |h_i|`` is read at every depth it holds.

    Returns
    -------
    numpy.ndarray
        The ratio at each depth held, shape ``(n_depths,)``.

    Examples
    --------
    A capture of 32 prompts of 8 Gaussian tokens (``d = 32``) whose first-position tokens carry a coordinate of
    1000 at depth 1 (coordinate 5): the ratio is about 1 at depth 0 and in the hundreds at depth 1:

    >>> import numpy as np
    >>> from latentbook.analysis import synthetic
    >>> from latentbook.analysis.confounds import massive_ratio
    >>> rng = np.random.default_rng(0)
    >>> ids, positions = np.repeat(np.arange(32), 8), np.tile(np.arange(8), 32)
    >>> states = rng.standard_normal((2, 256, 32))
    >>> states[1, positions == 0, 5] = 1000.0
    >>> cap = synthetic.as_capture(states, ids, positions, n_vectors=256)
    >>> ratio = massive_ratio(cap)
    >>> ratio.shape, bool(ratio[0] < 2), bool(ratio[1] > 100)
    ((2,), True, True)
    """
    ratios = []
    for layer in cap.depths.tolist():
        a = cap.abs_max(layer).astype(np.float64)
        ratios.append(a.max() / max(float(np.median(a)), 1e-300))
    return np.array(ratios)


def massive_dims(cap: Capture, layer: int, k: int) -> np.ndarray:
    """The ``k`` coordinates of largest ``max |h_i|`` over all captured tokens at ``layer``, sorted.

    Parameters
    ----------
    cap : Capture
        The capture whose per-coordinate ``max |h_i|`` is read.
    layer : int
        A depth ``l`` in ``0..L`` that ``cap`` holds; negative counts from ``L``.
    k : int
        How many coordinates, ``0 <= k < d``.

    Returns
    -------
    numpy.ndarray
        The ``k`` coordinate indices, ascending.

    Examples
    --------
    A capture of 32 prompts of 8 Gaussian tokens (``d = 32``) whose first-position tokens carry a coordinate of
    1000 at depth 1 (coordinate 5) is found:

    >>> import numpy as np
    >>> from latentbook.analysis import synthetic
    >>> from latentbook.analysis.confounds import massive_dims
    >>> rng = np.random.default_rng(0)
    >>> ids, positions = np.repeat(np.arange(32), 8), np.tile(np.arange(8), 32)
    >>> states = rng.standard_normal((2, 256, 32))
    >>> states[1, positions == 0, 5] = 1000.0
    >>> cap = synthetic.as_capture(states, ids, positions, n_vectors=256)
    >>> massive_dims(cap, 1, 1).tolist(), len(massive_dims(cap, 1, 3)), 5 in massive_dims(cap, 1, 3)
    ([5], 3, True)

    Raises
    ------
    InvalidInputError
        For a ``k`` outside ``0..d-1``, or a depth the capture does not hold.
    """
    if not isinstance(k, (int, np.integer)) or not 0 <= k < cap.d_model:
        raise InvalidInputError(f"k must be an integer in 0..{cap.d_model - 1}, got {k!r}.")
    return np.sort(np.argsort(cap.abs_max(layer), kind="stable")[::-1][:k])


def rotated(vectors: np.ndarray, seed: int = 0) -> np.ndarray:  # pragma: no mutate: default seed
    """``vectors @ R`` for one Haar-random orthogonal ``R`` (``d x d``): the same geometry in another basis.

    Parameters
    ----------
    vectors : numpy.ndarray
        Vectors along the last axis, shape ``(..., d)``.
    seed : int
        Seed of the rotation ``R``.

    Returns
    -------
    numpy.ndarray
        The rotated vectors, the same shape, float64.

    Examples
    --------
    One-hot tokens (``d = 64``, Omega ``1 - 1/8``) in a random basis: the same norms, but the Gaussian Omega:

    >>> import numpy as np
    >>> from latentbook.analysis.confounds import rotated
    >>> from latentbook.analysis.omega import gaussian_omega, omega
    >>> one_hot = np.eye(64)[np.random.default_rng(0).integers(0, 64, 200)]
    >>> turned = rotated(one_hot)
    >>> turned.shape, bool(np.allclose(np.linalg.norm(turned, axis=1), 1.0))
    ((200, 64), True)
    >>> float(omega(one_hot).mean()), bool(abs(float(omega(turned).mean()) - gaussian_omega(64)) < 0.02)
    (0.875, True)
    """
    x = np.asarray(vectors, dtype=np.float64)
    return x @ random_orthonormal(x.shape[-1], x.shape[-1], np.random.default_rng(seed))


def _cleaned(cap: Capture, layer: int, k: int, centre: bool, drop_first: bool) -> np.ndarray:
    """Omega of the sampled vectors at ``layer``; the first position goes *before* centring, because the sink
    token's massive coordinates dominate the mean of all tokens (centring on that mean plants a spike in every
    other token): without it the mean is that of the remaining sampled tokens, with it the exact mean."""
    x = cap.token_vectors(layer).astype(np.float64)
    if drop_first:
        x = x[cap.vectors.positions > 0]
    if centre:
        x = x - (x.mean(0) if drop_first else cap.mean(layer))
    if k:
        x = np.delete(x, massive_dims(cap, layer, k), axis=-1)  # pragma: no mutate: 2-d token vectors
    return omega(x)


def treatments(cap: Capture, layer: int, k: int = 4, seed: int = 0) -> dict[str, float]:
    """Mean Omega at ``layer`` of the capture's sampled token vectors, as captured and under each treatment.

    Keys: ``as captured``, ``first position dropped``, ``top-k dims dropped``, ``centred``, ``rotated`` (one
    random basis) and ``all removed`` (centred, first position and top-k dims dropped). Plain floats.

    Parameters
    ----------
    cap : Capture
        The capture whose sampled token vectors are read.
    layer : int
        A depth ``l`` in ``0..L`` that ``cap`` holds; negative counts from ``L``.
    k : int
        Coordinates of largest ``max |h_i|`` dropped in the "top-k" and "all removed" treatments.
    seed : int
        Seed of the random basis.

    Returns
    -------
    dict of str to float
        Mean Omega under each treatment, keyed as above.

    Examples
    --------
    A capture of 32 prompts of 8 Gaussian tokens (``d = 32``) whose first-position tokens carry a coordinate of
    1000 at depth 1 (coordinate 5): dropping the first position or the top coordinate brings Omega back to about
    the Gaussian value (0.196); centring on the mean of all tokens plants the sink's spike, negated, in every
    other token:

    >>> import numpy as np
    >>> from latentbook.analysis import synthetic
    >>> from latentbook.analysis.confounds import treatments
    >>> rng = np.random.default_rng(0)
    >>> ids, positions = np.repeat(np.arange(32), 8), np.tile(np.arange(8), 32)
    >>> states = rng.standard_normal((2, 256, 32))
    >>> states[1, positions == 0, 5] = 1000.0
    >>> cap = synthetic.as_capture(states, ids, positions, n_vectors=256)
    >>> {name: round(value, 3) for name, value in treatments(cap, 1, k=1).items()}
    {'as captured': 0.272, 'first position dropped': 0.194, 'top-1 dims dropped': 0.195, 'centred': 0.792,
     'rotated': 0.197, 'all removed': 0.193}

    Raises
    ------
    InvalidInputError
        For a ``k`` outside ``0..d-1``, or a depth the capture does not hold.
    """
    x = cap.token_vectors(layer).astype(np.float64)  # pragma: no mutate: float64 read by the callee
    return {
        "as captured": float(omega(x).mean()),
        # equivalent mutants here: None for a false flag
        "first position dropped": float(_cleaned(cap, layer, 0, False, True).mean()),  # pragma: no mutate
        # equivalent mutants here: None for a false flag
        f"top-{k} dims dropped": float(_cleaned(cap, layer, k, False, False).mean()),  # pragma: no mutate
        # equivalent mutants here: None for a false flag
        "centred": float(_cleaned(cap, layer, 0, True, False).mean()),  # pragma: no mutate
        "rotated": float(omega(rotated(x, seed)).mean()),
        "all removed": float(_cleaned(cap, layer, k, True, True).mean()),
    }


def cleaned_profile(
    cap: Capture,
    k: int = 4,
    centre: bool = True,
    drop_first: bool = True,
    n_boot: int = 1000,  # pragma: no mutate: default draws
    seed: int = 0,  # pragma: no mutate: default seed
) -> Profile:
    """``m(gamma)`` of the sampled tokens with the confounds removed, intervals resampling prompts.

    At each depth: ``h - mu`` (``centre``), tokens at position 0 dropped (``drop_first``), the ``k``
    coordinates of largest ``max |h_i|`` at that depth dropped; then ``omega_profiles.profile`` of the result.

    Parameters
    ----------
    cap : Capture
        The capture whose sampled token vectors are read at every depth it holds.
    k : int
        Coordinates of largest ``max |h_i|`` dropped at each depth (0: none).
    centre : bool
        Subtract the mean first: the exact mean over all captured tokens, or with ``drop_first`` the mean of the
        remaining sampled tokens.
    drop_first : bool
        Drop the tokens at position 0 (before centring).
    n_boot : int
        Bootstrap draws (``omega_profiles.profile``'s).
    seed : int
        Seed of the bootstrap.

    Returns
    -------
    Profile
        The cleaned ``m(gamma)`` with its prompt-bootstrap interval.

    Raises
    ------
    InvalidInputError
        For a ``k`` outside ``0..d-1``, or what ``omega_profiles.profile`` refuses (e.g. tokens of one prompt only).

    Examples
    --------
    A capture of 32 prompts of 8 Gaussian tokens (``d = 32``) whose first-position tokens carry a coordinate of
    1000 at depth 1 (coordinate 5): the cleaned profile sits at the Gaussian value at both depths:

    >>> import numpy as np
    >>> from latentbook.analysis import synthetic
    >>> from latentbook.analysis.confounds import cleaned_profile
    >>> from latentbook.analysis.omega import gaussian_omega
    >>> rng = np.random.default_rng(0)
    >>> ids, positions = np.repeat(np.arange(32), 8), np.tile(np.arange(8), 32)
    >>> states = rng.standard_normal((2, 256, 32))
    >>> states[1, positions == 0, 5] = 1000.0
    >>> cap = synthetic.as_capture(states, ids, positions, n_vectors=256)
    >>> cleaned = cleaned_profile(cap, k=1, n_boot=200)
    >>> cleaned.n_tokens, cleaned.n_prompts, bool(np.allclose(cleaned.m, gaussian_omega(31), atol=0.01))
    (224, 32, True)
    >>> bool(np.all((cleaned.low < gaussian_omega(31)) & (gaussian_omega(31) < cleaned.high)))
    True
    """
    values = np.stack([_cleaned(cap, layer, k, centre, drop_first) for layer in cap.depths.tolist()])
    ids = cap.vectors.prompt_ids
    if drop_first:
        ids = ids[cap.vectors.positions > 0]
    return profile(values, prompt_ids=ids, gamma=cap.gamma, n_boot=n_boot, seed=seed)
