"""The critical depth: where the order parameter ``m(gamma)`` jumps, with a bootstrap interval, or why there is none.

Usage: ``t = critical_depth(cap)`` (or ``critical_depth(gamma, m)``), then ``t.has_transition``, ``t.gamma_c``,
``t.ci``, ``t.amplitude``, ``t.width``, ``t.reason``.

Model (PAPER.md claim 1, "a critical depth gamma_c ~ 0.42 where m jumps"): the sigmoid
``m(gamma) = a + b / (1 + exp(-(gamma - gamma_c) / w))``: level ``a`` before, jump ``b`` (the amplitude),
centre ``gamma_c``, width ``w`` (10–90 % of the rise takes ``2 ln(9) w ~ 4.4 w`` of depth). It is fitted by least
squares: a grid over ``(gamma_c, w)`` with ``(a, b)`` solved exactly at each node, then refined jointly.
Introduced in: chapter 3.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidInputError
from .synthetic import sigmoid_profile

if TYPE_CHECKING:
    from ..capturing.results import Capture

BIC_MARGIN = 10.0  # "very strong" evidence on Kass & Raftery's (1995) scale
_N_WIDTHS = 12


@dataclass(frozen=True)
class Transition:
    """A fitted transition of ``m(gamma)``.

    ``gamma_c``, ``amplitude`` (the signed jump ``b``), ``width`` and ``base`` (``a``) are the best sigmoid's, and
    ``ci`` / ``amplitude_ci`` their residual-bootstrap percentile intervals at level ``level``; they describe a
    transition only when ``has_transition`` is true, otherwise ``reason`` says which test failed.
    """

    gamma_c: float
    ci: tuple[float, float]
    amplitude: float
    amplitude_ci: tuple[float, float]
    width: float
    base: float
    has_transition: bool
    reason: str
    noise: float  # residual standard deviation of the sigmoid fit
    delta_bic: dict[str, float]  # BIC(model) - BIC(sigmoid) for "constant", "linear", "quadratic"
    level: float
    fitted: np.ndarray = field(repr=False)


class _SigmoidFitter:
    """Least squares of the sigmoid on a fixed depth grid, for many curves at once (the bootstrap draws).

    Start: a grid over ``(gamma_c, w)`` (``4n + 1`` centres, widths from a twentieth of a layer step to half the
    range), with ``(a, b)`` solved exactly at each node; then Levenberg–Marquardt in ``(a, b, gamma_c, log w)``
    with Marquardt's diagonal scaling, ``gamma_c`` kept in the depth range and ``w`` in the grid's range.
    """

    def __init__(self, gamma: np.ndarray):
        self.gamma = gamma
        step = float(np.min(np.diff(gamma)))
        self.lower = np.array([-np.inf, -np.inf, gamma[0], np.log(step / 20)])
        self.upper = np.array([np.inf, np.inf, gamma[-1], np.log((gamma[-1] - gamma[0]) / 2)])
        centres = np.linspace(gamma[0], gamma[-1], 4 * len(gamma) + 1)
        widths = np.geomspace(step / 10, (gamma[-1] - gamma[0]) / 2, _N_WIDTHS)
        self.grid = np.array([(c, np.log(w)) for c in centres for w in widths])
        basis = _logistic((gamma[None, :] - self.grid[:, :1]) / np.exp(self.grid[:, 1:]))
        self.basis_mean = basis.mean(1)
        self.basis_centred = basis - self.basis_mean[:, None]
        self.basis_ss = np.maximum(np.sum(self.basis_centred**2, 1), 1e-300)

    def fit(self, m: np.ndarray) -> np.ndarray:
        """Parameters ``(a, b, gamma_c, w)`` of each row of ``m`` (shape ``(n_curves, n)`` or ``(n,)``)."""
        curves = np.atleast_2d(m)
        centred = curves - curves.mean(1, keepdims=True)
        sxy = centred @ self.basis_centred.T  # (n_curves, n_grid)
        best = np.argmax(sxy**2 / self.basis_ss, axis=1)  # least RSS of m ~ a + b s
        b = sxy[np.arange(len(curves)), best] / self.basis_ss[best]
        a = curves.mean(1) - b * self.basis_mean[best]
        params = self._refine(np.column_stack([a, b, self.grid[best]]), curves)
        params[:, 3] = np.exp(params[:, 3])
        return params[0] if np.ndim(m) == 1 else params

    def _model(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Model values (k, n) and Jacobian (k, n, 4) in ``(a, b, gamma_c, log w)``."""
        w = np.exp(p[:, 3:])
        z = (self.gamma[None, :] - p[:, 2:3]) / w
        s = _logistic(z)
        ds = p[:, 1:2] * s * (1 - s)
        jac = np.stack([np.ones_like(s), s, -ds / w, -ds * z], axis=-1)
        return p[:, :1] + p[:, 1:2] * s, jac

    def _refine(self, params: np.ndarray, curves: np.ndarray, max_iter: int = 200) -> np.ndarray:
        values, jac = self._model(params)
        cost = np.sum((values - curves) ** 2, 1)
        damping = np.full(len(params), 1e-3)
        active = np.ones(len(params), dtype=bool)
        for _ in range(max_iter):
            idx = np.flatnonzero(active)
            if idx.size == 0:
                break
            values, jac = self._model(params[idx])
            residual = values - curves[idx]
            jtj = np.einsum("kni,knj->kij", jac, jac)
            grad = np.einsum("kni,kn->ki", jac, residual)
            diag = np.einsum("kii->ki", jtj) + 1e-12 * np.max(np.abs(jtj), axis=(1, 2))[:, None]
            system = jtj + damping[idx, None, None] * np.einsum("ki,ij->kij", diag, np.eye(4))
            step = np.linalg.solve(system, -grad[..., None])[..., 0]
            trial = np.clip(params[idx] + step, self.lower, self.upper)
            trial_cost = np.sum((self._model(trial)[0] - curves[idx]) ** 2, 1)
            better = trial_cost < cost[idx]
            gain = np.where(better, cost[idx] - trial_cost, 0.0)
            params[idx[better]] = trial[better]
            cost[idx[better]] = trial_cost[better]
            damping[idx] = np.where(better, damping[idx] / 3, damping[idx] * 4)
            tiny_step = np.max(np.abs(step), axis=1) <= 1e-10 * (1 + np.max(np.abs(params[idx]), axis=1))
            flat = np.abs(trial_cost - cost[idx]) <= 1e-12 * np.maximum(cost[idx], 1e-300)
            converged = (
                (better & (gain <= 1e-12 * cost[idx])) | tiny_step | (flat & ~better) | (damping[idx] > 1e10)
            )
            active[idx[converged]] = False
        return params


def _logistic(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -500, 500)))


def _bic(rss: float, n: int, k: int) -> float:
    return n * np.log(max(rss, 1e-300) / n) + k * np.log(n)


def _polynomial_rss(gamma: np.ndarray, m: np.ndarray, degree: int) -> float:
    coeffs = np.polyfit(gamma, m, degree)
    return float(np.sum((np.polyval(coeffs, gamma) - m) ** 2))


def critical_depth(
    gamma: np.ndarray | Capture,
    m: np.ndarray | None = None,
    n_boot: int = 200,
    seed: int = 0,
    level: float = 0.95,
    max_width: float = 0.08,
    min_amplitude: float = 0.0,
) -> Transition:
    """Fit ``m(gamma) = a + b / (1 + exp(-(gamma - gamma_c)/w))`` and decide whether it shows a transition.

    Pass ``gamma`` and ``m`` (one value per depth), or a ``Capture`` (its ``gamma`` and ``omega_mean()``).

    Criterion (``has_transition``), all four must hold:

    1. the sigmoid beats the constant, linear and quadratic models by ``BIC >= 10`` each (Gaussian errors,
       ``BIC = n log(RSS/n) + k log n`` with ``k`` = 1, 2, 3, 4): a jump, not a trend or a bend;
    2. ``|b| >= 3 * noise`` (residual s.d. of the sigmoid fit) and ``|b| >= min_amplitude``;
    3. ``w <= max_width`` (default 0.08: 10–90 % of the rise within ~0.35 of the depth): sharp;
    4. ``gamma_c`` lies strictly between the second and the second-to-last depth: at least two depths on each
       side, so a jump of the first or last layer alone is not a transition of the stream.

    ``ci`` is a percentile interval from a residual bootstrap: ``n_boot`` refits of ``fitted + e*``, with ``e*``
    drawn from the centred, leverage-corrected residuals ``r_i / sqrt(1 - h_ii)`` (Davison & Hinkley 1997,
    ``h`` from the fit's Jacobian: the depths on the rise have high leverage), its arms stretched by Student's
    ``t_{n-4} / z``; computed whether or not there is a transition.
    Introduced in: chapter 3 (PAPER.md claim 1).
    """
    gamma, m = _as_profile(gamma, m)
    if not isinstance(n_boot, (int, np.integer)) or n_boot < 20:
        raise InvalidInputError(f"n_boot must be an integer >= 20 for a bootstrap interval, got {n_boot!r}.")
    if not 0.5 < level < 1:
        raise InvalidInputError(f"level must lie in (0.5, 1), got {level!r}.")
    n = len(gamma)
    fitter = _SigmoidFitter(gamma)
    a, b, gc, w = fitter.fit(m)
    fitted = sigmoid_profile(gamma, gc, w, b, a)
    residuals = m - fitted
    rss = float(np.sum(residuals**2))
    noise = float(np.sqrt(rss / (n - 4)))
    delta_bic = {
        name: float(_bic(_polynomial_rss(gamma, m, degree), n, degree + 1) - _bic(rss, n, 4))
        for name, degree in (("constant", 0), ("linear", 1), ("quadratic", 2))
    }

    rng = np.random.default_rng(seed)
    jac = fitter._model(np.array([[a, b, gc, np.log(w)]]))[1][0]
    leverage = np.einsum("ij,ji->i", jac, np.linalg.pinv(jac))
    pool = residuals / np.sqrt(np.clip(1.0 - leverage, 1e-3, None))
    pool = pool - pool.mean()
    draws = fitter.fit(fitted[None, :] + rng.choice(pool, (n_boot, n)))
    ci = _widened_percentile(draws[:, 2], gc, level, n - 4)
    amplitude_ci = _widened_percentile(draws[:, 1], b, level, n - 4)

    reason = _no_transition_reason(gamma, b, gc, w, noise, delta_bic, max_width, min_amplitude)
    return Transition(
        gamma_c=float(gc),
        ci=ci,
        amplitude=float(b),
        amplitude_ci=amplitude_ci,
        width=float(w),
        base=float(a),
        has_transition=not reason,
        reason=reason,
        noise=noise,
        delta_bic=delta_bic,
        level=level,
        fitted=fitted,
    )


def _widened_percentile(draws: np.ndarray, estimate: float, level: float, dof: int) -> tuple[float, float]:
    """Percentile interval, its arms around ``estimate`` stretched by ``t_dof / z`` at ``level``.

    With a few dozen depths the percentile bootstrap is too narrow (it ignores that the noise level itself is
    estimated); Student's factor is the usual small-sample correction (``t_26 / z = 1.05`` for 30 layers).
    """
    from scipy.stats import norm, t

    stretch = t.ppf((1 + level) / 2, dof) / norm.ppf((1 + level) / 2)
    low, high = np.percentile(draws, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    return float(estimate - stretch * (estimate - low)), float(estimate + stretch * (high - estimate))


def _no_transition_reason(
    gamma: np.ndarray,
    b: float,
    gc: float,
    w: float,
    noise: float,
    delta_bic: dict[str, float],
    max_width: float,
    min_amplitude: float,
) -> str:
    """Empty when all four criteria of ``critical_depth`` hold; otherwise the first that fails, in words."""
    weakest = min(delta_bic, key=delta_bic.get)
    if delta_bic[weakest] < BIC_MARGIN:
        return (
            f"a {weakest} model explains m(gamma) about as well as a sigmoid "
            f"(BIC difference {delta_bic[weakest]:.1f} < {BIC_MARGIN:.0f})"
        )
    if abs(b) < 3 * noise or abs(b) < min_amplitude:
        return f"the jump {b:+.4f} is below 3 x noise ({3 * noise:.4f}) or min_amplitude ({min_amplitude})"
    if w > max_width:
        return f"the rise is gradual: width {w:.3f} > max_width {max_width} (a trend, not a jump)"
    if not gamma[1] < gc < gamma[-2]:
        return f"gamma_c = {gc:.3f} sits at the edge of the depth range: a first- or last-layer effect"
    return ""


def _as_profile(gamma: np.ndarray | Capture, m: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    if m is None:
        if not hasattr(gamma, "omega_mean"):
            raise InvalidInputError("Pass gamma and m (one value per depth), or a Capture alone.")
        gamma, m = gamma.gamma, gamma.omega_mean()
    g = np.asarray(gamma, dtype=np.float64)
    v = np.asarray(m, dtype=np.float64)
    if g.ndim != 1 or g.shape != v.shape:
        raise InvalidInputError(
            f"gamma and m must be 1-D of the same length, got shapes {g.shape} and {v.shape}."
        )
    if len(g) < 8:
        raise InvalidInputError(
            f"A transition needs at least 8 depths to fit 4 parameters and test them; got {len(g)}."
        )
    if not (np.all(np.isfinite(g)) and np.all(np.isfinite(v))):
        raise InvalidInputError("gamma and m must be finite; drop depths with NaN before fitting.")
    if np.any(np.diff(g) <= 0):
        raise InvalidInputError("gamma must be strictly increasing (one value per depth, in order).")
    return g, v
