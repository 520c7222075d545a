"""The linear probe of the TCO test (``analysis.tco``): ridge regression of a one-hot class on standardised states,
its penalty chosen by generalised cross-validation on the training tokens only (Golub, Heath & Wahba 1979).

``fit_probe(x, y, n_classes)`` gives a ``Probe`` (``probe.scores(x)``: one score per class); ``ridge_gcv`` the
penalties it tries (``RIDGE_GRID``, relative to the data's mean squared singular value) and the GCV of each.
Introduced in: chapter 6.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

RIDGE_GRID = np.logspace(-4, 2, 13)  # penalties tried by GCV, in units of the mean squared singular value


@dataclass(frozen=True)
class Probe:
    """A linear read-out of the value: ``scores = ((x - mean) / scale) @ weights + prior``."""

    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray  # (d, k)
    prior: np.ndarray  # (k,)
    penalty: float

    def scores(self, x: np.ndarray) -> np.ndarray:
        return ((x - self.mean) / self.scale) @ self.weights + self.prior


class _Ridge(NamedTuple):
    """What ``fit_probe`` and ``ridge_gcv`` share: the standardisation, the prior, the thin SVD ``Z = U S V^T``
    (``s2 = S^2``, ``v`` and the target's coordinates ``a = U^T Y``) and the GCV of each penalty tried."""

    mean: np.ndarray
    scale: np.ndarray
    prior: np.ndarray
    s2: np.ndarray
    v: np.ndarray
    a: np.ndarray
    penalties: np.ndarray
    gcv: np.ndarray


def _ridge(x: np.ndarray, y: np.ndarray, n_classes: int) -> _Ridge:
    """Standardisation, centred one-hot target, thin SVD and the GCV of every penalty ``fit_probe`` tries."""
    x = np.asarray(x, dtype=np.float64)
    mean = x.mean(0)
    scale = x.std(0)
    scale = np.where(scale > 1e-8 * max(float(scale.max()), 1e-30), scale, 1.0)
    z = (x - mean) / scale
    onehot = np.zeros((len(y), n_classes))
    onehot[np.arange(len(y)), y] = 1.0
    prior = onehot.mean(0)
    target = onehot - prior
    # the thin SVD through the eigenvectors of the smaller Gram matrix (z z^T or z^T z): same numbers, faster
    m, d = z.shape
    gram = z @ z.T if m <= d else z.T @ z
    s2, vecs = np.linalg.eigh(gram)
    keep = s2 > 1e-10 * max(float(s2.max()), 1e-30)
    s2, vecs = s2[keep], vecs[:, keep]
    s = np.sqrt(s2)
    if m <= d:  # vecs = U
        a = vecs.T @ target
        v = (z.T @ vecs) / s
    else:  # vecs = V
        v = vecs
        a = (vecs.T @ (z.T @ target)) / s[:, None]
    a2 = np.sum(a**2, axis=1)
    outside = float(np.sum(target**2) - a2.sum())
    penalties = RIDGE_GRID * max(float(s2.mean()), 1e-30)
    gcv = np.array([_gcv(lam, m, s2, a2, outside) for lam in penalties])
    return _Ridge(mean, scale, prior, s2, v, a, penalties, gcv)


def _gcv(lam: float, m: int, s2: np.ndarray, a2: np.ndarray, outside: float) -> float:
    """``||(I - H) Y||^2 / (m - 1 - tr H)^2`` at penalty ``lam``; ``inf`` where ``m - 1 - tr H <= 0.5``."""
    f = s2 / (s2 + lam)
    dof = m - 1 - f.sum()  # centring spends one degree of freedom
    if dof <= 0.5:
        return np.inf
    return float((outside + np.sum((1 - f) ** 2 * a2)) / dof**2)


def ridge_gcv(x: np.ndarray, y: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """(the absolute penalties ``fit_probe`` tries, its GCV at each; ``inf`` where too few degrees of freedom)."""
    ridge = _ridge(x, y, n_classes)
    return ridge.penalties, ridge.gcv


def fit_probe(x: np.ndarray, y: np.ndarray, n_classes: int) -> Probe:
    """Ridge regression of the one-hot class on standardised ``x`` ``(m, d)``; penalty by GCV over ``RIDGE_GRID``.

    ``W = V diag(s / (s^2 + lambda)) U^T Y`` from the thin SVD ``Z = U S V^T`` (through the eigenvectors of the
    smaller Gram matrix); GCV (``ridge_gcv``) picks ``lambda`` minimising
    ``||(I - H) Y||^2 / (m - 1 - tr H)^2`` on the training tokens only, ``H`` the hat matrix of the centred data:
    centring spends one degree of freedom (the unpenalised intercept). Counting ``m - tr H`` instead, with fewer
    tokens than dimensions (centred rank ``m - 1``), the residual goes to 0 as ``lambda -> 0`` while the
    denominator stays near 1, and GCV always picks the smallest penalty (an interpolator).

    Not ``sklearn.linear_model.RidgeCV`` (a test-only dependency): RidgeCV selects by exact leave-one-out, not
    GCV, and its ``alphas`` are absolute where ``RIDGE_GRID`` is relative to the data's mean squared singular
    value. With ``fit_intercept=True`` its hat matrix includes the intercept, as here (``m - 1 - tr H``), so the
    two agree where every token has the same leverage (``tests/test_tco.py``).
    """
    r = _ridge(x, y, n_classes)
    finite = np.isfinite(r.gcv)  # the first smallest; penalty 0 when no penalty leaves a degree of freedom
    best_lam = float(r.penalties[np.argmin(np.where(finite, r.gcv, np.inf))]) if finite.any() else 0.0
    weights = r.v @ ((np.sqrt(r.s2) / (r.s2 + best_lam))[:, None] * r.a)
    return Probe(r.mean, r.scale, weights, r.prior, best_lam)
