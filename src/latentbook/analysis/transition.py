"""The critical depth: does ``m(gamma)`` jump, where and by how much, with intervals that live in range.

Usage: ``t = critical_depth(cap)`` (intervals from resampled prompts) or ``critical_depth(gamma, m)``
(optionally ``draws=``, bootstrap draws of the profile); then ``t.has_transition``, ``t.gamma_c``, ``t.ci``,
``t.amplitude``, ``t.amplitude_ci``, ``t.reason`` and ``t.bic`` (every model's BIC).

Edges. The embedding (``l = 0``), the first block's output (``l = 1``) and the last block's output are edge
effects in every model of chapter 3: the first block rewrites the embedding (``m`` rises over one or two layers)
and the last prepares the unembedding. They are not fitted (``skip``, default ``(2, 1)`` depths).

Models, fitted by weighted least squares on the remaining depths ``g`` (weights ``1 / (se_l^2 + tau^2)``: ``se_l``
the bootstrap s.e. of ``m`` at depth ``l`` when draws are given, ``tau^2`` the misfit of the cubic beyond it):

- smooth nulls: constant, linear, quadratic, cubic, cubic splines with 1 or 2 equally spaced interior knots
  (fewer on short profiles), and a *kink* (a continuous broken line with a free break);
- the *jump*: two lines joined by a logistic switch of width ``w <= max_width`` (``w = 0``: a step between two
  depths), ``m = (1 - s)(a_1 + c_1 g) + s (a_2 + c_2 g)``, ``s = 1 / (1 + exp(-(g - gamma_c) / w))``; the jump is
  the gap between the two lines at the centre, ``b = (a_2 - a_1) + (c_2 - c_1) gamma_c``.

Two lines, not one trend plus a step, so that a bend (a slope that changes, as in a decay) is not read as a jump:
the kink null has the bend without the gap, the splines a smooth hump. ``BIC = n log(RSS_w / n) + k log n`` with
``k`` = 1, 2, 3, 4, 4 + knots, 4 (kink: 3 + break), 5 (step: 4 + centre) and 6 (switch: 4 + centre + width).
Introduced in: chapter 3.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidInputError

if TYPE_CHECKING:
    from ..capturing.results import Capture

BIC_MARGIN = 10.0  # "very strong" evidence on Kass & Raftery's (1995) scale
NOISE_FACTOR = 3.0  # the jump must exceed this many residual standard deviations
MIN_FITTED = 8  # depths left after the edges: enough to fit two lines and test them
SKIP = (2, 1)  # edge depths not fitted: embedding and first block; last block
MAX_WIDTH = 0.03  # the widest switch that counts as a jump (10-90 % of the rise within 4.4 w of depth)
_N_WIDTHS = 4
_POLYNOMIALS = ("constant", "linear", "quadratic", "cubic")
MAX_KNOTS = 2  # smooth nulls include cubic splines with 1 or 2 interior knots (calibrated: chapter 8)


@dataclass(frozen=True)
class Transition:
    """The best jump fit of ``m(gamma)`` and whether it is a transition.

    ``gamma_c`` and ``amplitude`` (the signed jump ``b``) describe the best jump model; ``ci`` and
    ``amplitude_ci`` are percentile intervals at ``level`` (``ci_method`` says from what), inside the fitted depth
    range and ``[-1, 1]``, and always containing their estimate. They describe a transition only when
    ``has_transition`` is true; otherwise ``reason`` says which test failed.

    Attributes
    ----------
    gamma_c : float
        Centre of the best jump.
    ci : tuple of float
        Percentile interval of ``gamma_c`` at ``level``.
    amplitude : float
        The signed jump ``b``: the gap between the two lines at ``gamma_c``.
    amplitude_ci : tuple of float
        Percentile interval of ``amplitude`` at ``level``, inside ``[-1, 1]``.
    width : float
        The switch's width ``w``; 0 for a step between two depths.
    base : float
        The fitted ``m`` just before the jump (the left line at ``gamma_c``).
    has_transition : bool
        Whether the criterion of ``critical_depth`` holds.
    reason : str
        Empty for a transition; otherwise the first test that failed, in words.
    noise : float
        Residual standard deviation of the jump fit.
    delta_bic : dict of str to float
        ``BIC(null) - BIC(jump)`` for each smooth null.
    bic : dict of str to float
        Every model's BIC, ``"jump"`` included.
    level : float
        Coverage of the intervals.
    ci_method : str
        ``"prompt bootstrap + misfit"`` or ``"parametric (AR(1) misfit)"``.
    fitted_gamma : numpy.ndarray
        The depths fitted (edges dropped).
    fitted : numpy.ndarray
        The jump model at ``fitted_gamma``.

    Examples
    --------
    The paper's planted curve (``m`` from 0.69 to 0.89 at ``gamma_c = 0.42``, 41 depths, noise 0.01):

    >>> from latentbook.analysis import synthetic, transition
    >>> curve = synthetic.order_parameter_curve(seed=0)
    >>> t = transition.critical_depth(curve.gamma, curve.m, n_boot=20)
    >>> t.has_transition, t.reason, t.ci_method
    (True, '', 'parametric (AR(1) misfit)')
    >>> round(t.gamma_c, 2), bool(t.ci[0] <= 0.42 <= t.ci[1]), round(t.amplitude, 1)
    (0.42, True, 0.2)
    >>> bool(min(t.delta_bic.values()) >= transition.BIC_MARGIN), t.fitted.shape == t.fitted_gamma.shape
    (True, True)
    """

    gamma_c: float
    ci: tuple[float, float]
    amplitude: float
    amplitude_ci: tuple[float, float]
    width: float  # 0 for a step between two depths
    base: float  # the fitted m just before the jump (the left line at gamma_c)
    has_transition: bool
    reason: str
    noise: float  # residual standard deviation of the jump fit
    delta_bic: dict[str, float]  # BIC(null) - BIC(jump) for each smooth null
    bic: dict[str, float]  # every model's BIC, "jump" included
    level: float
    ci_method: str  # "prompt bootstrap + misfit" or "parametric (AR(1) misfit)"
    fitted_gamma: np.ndarray = field(repr=False)  # the depths fitted (edges dropped)
    fitted: np.ndarray = field(repr=False)  # the jump model at fitted_gamma


def is_testable(n_depths: int, skip: tuple[int, int] = SKIP) -> bool:
    """Enough depths for ``critical_depth``: at least ``MIN_FITTED`` after dropping ``skip`` edge depths.

    Parameters
    ----------
    n_depths : int
        Depths of the profile.
    skip : tuple of int
        Edge depths left out (first, last); by default ``SKIP``, ``(2, 1)``.

    Returns
    -------
    bool
        Whether ``critical_depth`` can fit a profile of that many depths.

    Examples
    --------
    Eight depths must remain once the edges are dropped:

    >>> from latentbook.analysis import transition
    >>> transition.is_testable(11), transition.is_testable(10), transition.is_testable(10, skip=(1, 1))
    (True, False, True)
    """
    return n_depths - sum(skip) >= MIN_FITTED


# --- least squares over a grid of designs ------------------------------------------------------------------


class _Family:
    """Designs ``X_j`` (one per grid node) with their weighted QR factors; fits many curves at once.

    ``fit(Y)`` returns, for each row of ``Y``, the node of least weighted RSS, that RSS and its coefficients.
    """

    def __init__(self, designs: np.ndarray, sqrt_w: np.ndarray, nodes: np.ndarray):
        self.designs = designs  # (n_nodes, n, p)
        self.nodes = nodes  # (n_nodes, ...) the node's parameters
        q, self.r = np.linalg.qr(designs * sqrt_w[None, :, None])
        self.shape = q.shape
        # pragma: no mutate start (negative reshape size)
        self.q_flat = q.transpose(1, 0, 2).reshape(q.shape[1], -1)  # (n, n_nodes * p): one matrix product
        # pragma: no mutate end
        self.sqrt_w = sqrt_w

    def fit(self, curves: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        yw = curves * self.sqrt_w  # (c, n)
        proj = (yw @ self.q_flat).reshape(len(curves), self.shape[0], self.shape[2])  # (c, n_nodes, p)
        rss = np.sum(yw**2, 1)[:, None] - np.sum(proj**2, 2)
        best = np.argmin(rss, 1)
        rows = np.arange(len(curves))
        coef = np.linalg.solve(self.r[best], proj[rows, best][..., None])[..., 0]
        return best, np.maximum(rss[rows, best], 0.0), coef


def _logistic(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -500, 500)))  # pragma: no mutate: overflow guard


def _cubic_spline(g: np.ndarray, knots: int) -> np.ndarray:
    """Truncated power basis of a cubic regression spline: ``1, g, g^2, g^3, (g - kappa_j)_+^3`` with ``knots``
    interior knots ``kappa_j`` equally spaced over the fitted range."""
    kappa = np.linspace(g[0], g[-1], knots + 2)[1:-1]
    return np.column_stack([np.vander(g, 4), np.maximum(g[:, None] - kappa[None, :], 0) ** 3])


def _two_lines(g: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Design of ``(1 - s)(a_1 + c_1 g) + s (a_2 + c_2 g)`` for switches ``s`` of shape ``(nodes, n)``."""
    return np.stack([1 - s, (1 - s) * g, s, s * g], axis=-1)


class _Models:
    """Every model of the module docstring on one fitted depth grid ``g`` with weights ``w``."""

    def __init__(self, g: np.ndarray, weights: np.ndarray, max_width: float):
        self.g = g
        n = len(g)
        sqrt_w = np.sqrt(weights / weights.mean())
        self.poly = {
            # equivalent mutants here: unread nodes
            name: _Family(np.vander(g, degree + 1)[None], sqrt_w, np.zeros((1, 0)))  # pragma: no mutate
            for degree, name in enumerate(_POLYNOMIALS)
        }
        self.splines = {
            # pragma: no mutate start (unread nodes)
            f"spline ({knots} knots)": _Family(_cubic_spline(g, knots)[None], sqrt_w, np.zeros((1, 0)))
            # pragma: no mutate end
            for knots in range(1, min(MAX_KNOTS, (n - 8) // 2) + 1)
        }
        step = float(np.min(np.diff(g)))
        centres = np.linspace(g[1], g[-2], 2 * n + 1)[1:-1]  # at least two depths on each side
        kink = np.stack([np.ones((len(centres), n)), np.broadcast_to(g, (len(centres), n))], -1)
        kink = np.concatenate([kink, np.maximum(g[None, :] - centres[:, None], 0)[..., None]], -1)
        self.kink = _Family(kink, sqrt_w, centres[:, None])  # pragma: no mutate: unread nodes
        gaps = (g[1:-2] + g[2:-1]) / 2  # a step between depths i and i + 1, two depths or more on each side
        steps = (g[None, :] > gaps[:, None]).astype(np.float64)  # pragma: no mutate: a step between depths
        self.step = _Family(_two_lines(g, steps), sqrt_w, np.column_stack([gaps, np.zeros_like(gaps)]))
        widths = np.geomspace(step / 10, max_width, _N_WIDTHS) if max_width > step / 10 else np.array([])
        # equivalent mutants here: negative reshape size
        nodes = np.array([(c, w) for c in centres for w in widths]).reshape(-1, 2)  # pragma: no mutate
        switch = _logistic((g[None, :] - nodes[:, :1]) / np.maximum(nodes[:, 1:], 1e-300))
        self.switch = _Family(_two_lines(g, switch), sqrt_w, nodes) if len(nodes) else None
        self.k = {"constant": 1, "linear": 2, "quadratic": 3, "cubic": 4, "kink": 4}
        self.k.update({name: family.designs.shape[2] for name, family in self.splines.items()})

    def bic(self, rss: np.ndarray, k: int) -> np.ndarray:
        n = len(self.g)
        return n * np.log(np.maximum(rss, 1e-300) / n) + k * np.log(n)

    def smooth_bic(self, curves: np.ndarray) -> dict[str, np.ndarray]:
        families = {**self.poly, "kink": self.kink, **self.splines}
        return {name: self.bic(family.fit(curves)[1], self.k[name]) for name, family in families.items()}

    def jump(self, curves: np.ndarray) -> dict[str, np.ndarray]:
        """The best jump (step or switch) of each curve: centre, width, amplitude, base, BIC, location span."""
        best, rss, coef = self.step.fit(curves)
        centre, width = self.step.nodes[best, 0], np.zeros(len(curves))
        bic = self.bic(rss, 5)
        index = np.searchsorted(self.g, centre)  # the depth right after the step
        low, high = self.g[index - 1], self.g[index]
        if self.switch is not None:
            s_best, s_rss, s_coef = self.switch.fit(curves)
            s_bic = self.bic(s_rss, 6)
            better = s_bic < bic  # pragma: no mutate: a tie of two BICs
            centre = np.where(better, self.switch.nodes[s_best, 0], centre)
            width = np.where(better, self.switch.nodes[s_best, 1], width)
            coef = np.where(better[:, None], s_coef, coef)
            bic = np.where(better, s_bic, bic)
            # equivalent mutants here: a switch's gap bounds
            gap = np.clip(np.searchsorted(self.g, centre), 1, len(self.g) - 1)  # pragma: no mutate
            half = np.maximum(
                width, (self.g[gap] - self.g[gap - 1]) / 2
            )  # located to a depth gap, or its width
            low, high = np.where(better, centre - half, low), np.where(better, centre + half, high)
        left = coef[:, 0] + coef[:, 1] * centre
        right = coef[:, 2] + coef[:, 3] * centre
        return {
            "centre": centre,
            "width": width,
            "amplitude": right - left,
            "base": left,
            "bic": bic,
            "low": low,
            "high": high,
            "coef": coef,
        }

    def jump_curve(self, centre: float, width: float, coef: np.ndarray) -> np.ndarray:
        # pragma: no mutate start (a step as a zero-width switch)
        s = (self.g > centre).astype(float) if width == 0 else _logistic((self.g - centre) / width)
        # pragma: no mutate end
        return _two_lines(self.g, s[None])[0] @ coef


# --- the test ------------------------------------------------------------------------------------------------


def critical_depth(
    gamma: np.ndarray | Capture,
    m: np.ndarray | None = None,
    *,
    draws: np.ndarray | None = None,
    n_boot: int = 200,  # pragma: no mutate: default draws
    seed: int = 0,
    level: float = 0.95,
    max_width: float = MAX_WIDTH,
    min_amplitude: float = 0.0,
    skip: tuple[int, int] = SKIP,
) -> Transition:
    """Fit the models of the module docstring to ``m(gamma)`` and decide whether it has a transition.

    Pass ``gamma`` and ``m`` (one value per depth, optionally ``draws``: bootstrap draws of the profile, shape
    ``(n_draws, n_depths)``, e.g. from resampled prompts), or a ``Capture`` (its exact ``m`` and ``n_boot``
    prompt-bootstrap draws, ``omega_profiles.profile``).

    Criterion (``has_transition``): the jump model beats every smooth null (constant, linear, quadratic, cubic,
    splines, kink) by ``BIC >= 10``, and ``|b| >= 3 x noise`` (the jump fit's residual s.d.) and ``|b| >= min_amplitude``.
    The centre has at least two fitted depths on each side and the switch is sharp (``w <= max_width``: 10-90 %
    of the rise within ``4.4 w`` of depth) by construction.

    Intervals: refits of the jump model to perturbed profiles, percentile at ``level``. Always a parametric
    bootstrap of the misfit (Gaussian AR(1) noise with the residuals' s.d. and lag-1 correlation around the fit:
    neighbouring depths' misfits are correlated); with ``draws``, also the refits of every draw, and the interval
    is the hull of both. A step's location is known only to the gap between two depths, so each refit counts the
    whole gap; the jump's interval also holds the local fits' intervals (``local_interval``), since a curved
    background moves the global two-line gap more than any noise does. Introduced in: chapter 3 (book/paper.md claim 1).

    Parameters
    ----------
    gamma : numpy.ndarray or Capture
        Depth fractions, strictly increasing, one per depth; or a ``Capture``, with ``m`` left None.
    m : numpy.ndarray, optional
        ``m(gamma)``, one finite value per depth; None when ``gamma`` is a capture.
    draws : numpy.ndarray, optional
        Bootstrap draws of the profile, shape ``(n_draws >= 20, n_depths)``; None fits the profile alone (the
        interval is then the parametric bootstrap of the misfit only). A capture supplies its own.
    n_boot : int
        Parametric refits of the misfit (at least 20), and for a capture its prompt-bootstrap draws (at least 100).
    seed : int
        Seed of the bootstraps.
    level : float
        Coverage of the intervals, in ``(0.5, 1)``.
    max_width : float
        The widest switch ``w`` the jump model may take; by default ``MAX_WIDTH`` (0.03).
    min_amplitude : float
        The smallest ``|b|`` that counts as a transition; 0 leaves only the noise criterion.
    skip : tuple of int
        Edge depths not fitted (first, last); by default ``SKIP``, ``(2, 1)``: the embedding and first block,
        and the last block.

    Returns
    -------
    Transition
        ``gamma_c``, the jump ``amplitude``, their intervals, the width, ``has_transition`` and the ``reason``
        when there is none, the noise, every model's BIC, and the fitted curve.

    Raises
    ------
    InvalidInputError
        For a profile that is not 1-D, finite and strictly increasing in ``gamma``, ``draws`` of the wrong shape
        or not finite, fewer than ``MIN_FITTED`` (8) depths left after ``skip``, or ``n_boot``, ``level`` or
        ``max_width`` out of range.

    Examples
    --------
    A step of 0.2 planted between the depths 0.5 and 0.55 of 21 (on a slope, noise 0.005) is found there, as a
    step; a flat curve has no transition, and ``reason`` says why:

    >>> import numpy as np
    >>> from latentbook.analysis import synthetic, transition
    >>> g = np.arange(21) / 20
    >>> m = 0.5 + 0.1 * g + 0.2 * (g > 0.5) + 0.005 * np.random.default_rng(0).standard_normal(21)
    >>> t = transition.critical_depth(g, m, n_boot=20, skip=(0, 0))
    >>> t.has_transition, t.gamma_c, t.width, t.ci
    (True, 0.525, 0.0, (0.5, 0.55))
    >>> round(t.amplitude, 1), bool(t.amplitude_ci[0] <= 0.2 <= t.amplitude_ci[1])
    (0.2, True)
    >>> flat = synthetic.order_parameter_curve(amplitude=0.0, seed=0)
    >>> t = transition.critical_depth(flat.gamma, flat.m, n_boot=20)
    >>> t.has_transition, t.reason
    (False, 'a constant model explains m(gamma) about as well as a jump (BIC difference ... < 10)')
    """
    gamma, m, draws = _as_profile(gamma, m, draws, n_boot, seed)
    if not isinstance(n_boot, (int, np.integer)) or n_boot < 20:
        raise InvalidInputError(f"n_boot must be an integer >= 20 for a bootstrap interval, got {n_boot!r}.")
    if not 0.5 < level < 1:
        raise InvalidInputError(f"level must lie in (0.5, 1), got {level!r}.")
    if not max_width >= 0:
        raise InvalidInputError(f"max_width must be >= 0, got {max_width!r}.")
    start, stop = _fitted_range(len(gamma), skip)
    g, y = gamma[start:stop], m[start:stop]
    inside_draws = draws[:, start:stop] if draws is not None else None

    weights = _weights(g, y, inside_draws)
    models = _Models(g, weights, max_width)
    bic = {name: float(value[0]) for name, value in models.smooth_bic(y[None]).items()}
    fit = {key: value[0] for key, value in models.jump(y[None]).items()}
    bic["jump"] = float(fit["bic"])
    delta_bic = {name: value - bic["jump"] for name, value in bic.items() if name != "jump"}
    fitted = models.jump_curve(fit["centre"], fit["width"], fit["coef"])
    residuals = y - fitted
    k = 5 if fit["width"] == 0 else 6
    # equivalent mutants here: degrees of freedom floor
    noise = float(np.sqrt(np.sum(residuals**2) / max(len(y) - k, 1)))  # pragma: no mutate

    rng = np.random.default_rng(seed)
    # equivalent mutants here: the misfit's sign
    perturbed = [fitted[None, :] + _ar1_noise(residuals, n_boot, rng, dof=len(y) - k)]  # pragma: no mutate
    method = "parametric (AR(1) misfit)"
    if inside_draws is not None:
        perturbed.append(inside_draws)
        method = "prompt bootstrap + misfit"
    profiles = np.concatenate(perturbed)
    refits = models.jump(profiles)
    ci = _hull_interval(refits["low"], refits["high"], (fit["low"], fit["high"]), level)
    centre, width = float(fit["centre"]), float(fit["width"])
    local = local_interval(g, y, fitted, profiles, centre, width, level)
    gap = float(fit["amplitude"])
    own = (gap, gap) if math.isnan(local[0]) else (min(gap, local[0]), max(gap, local[1]))
    amplitude_ci = _hull_interval(refits["amplitude"], refits["amplitude"], own, level)
    amplitude_ci = (max(amplitude_ci[0], -1.0), min(amplitude_ci[1], 1.0))

    reason = _no_transition_reason(float(fit["amplitude"]), noise, delta_bic, min_amplitude)
    return Transition(
        gamma_c=float(fit["centre"]),
        ci=ci,
        amplitude=float(fit["amplitude"]),
        amplitude_ci=amplitude_ci,
        width=float(fit["width"]),
        base=float(fit["base"]),
        has_transition=not reason,
        reason=reason,
        noise=noise,
        delta_bic=delta_bic,
        bic=bic,
        level=level,
        ci_method=method,
        fitted_gamma=g,
        fitted=fitted,
    )


def _fitted_range(n_depths: int, skip: tuple[int, int]) -> tuple[int, int]:
    first, last = (int(v) for v in skip)
    if first < 0 or last < 0:
        raise InvalidInputError(f"skip must be two counts >= 0 (first, last), got {skip!r}.")
    if n_depths - first - last < MIN_FITTED:
        raise InvalidInputError(
            f"A transition needs at least {MIN_FITTED} depths after dropping {first} edge depths at the start "
            f"and {last} at the end; got {n_depths} depths. Pass a smaller skip= to fit the edges too."
        )
    return first, n_depths - last


def _weights(g: np.ndarray, y: np.ndarray, draws: np.ndarray | None) -> np.ndarray:
    """``1 / (se_l^2 + tau^2)``: ``se_l`` the draws' s.d. at each depth, ``tau^2`` the cubic's misfit beyond it."""
    if draws is None:
        return np.ones(len(g))
    se2 = np.var(draws, axis=0, ddof=1)
    rss = float(np.sum((np.polyval(np.polyfit(g, y, 3), g) - y) ** 2))
    tau2 = max(rss / (len(g) - 4) - float(se2.mean()), 1e-6 * float(se2.mean()) + 1e-300)
    return 1.0 / (se2 + tau2)  # pragma: no mutate: weights' scale


# (depths on each side, polynomial degree): short lines for short profiles, quadratics for curved backgrounds
LOCAL_FITS = (
    (3, 1),
    (4, 1),
    (5, 2),
    (6, 1),
    (8, 2),
)  # growing in h: a side too short for one is for the rest
LOCAL_PRECISION = 1.5  # local intervals up to this many times the shortest's length enter the jump's interval


def local_gaps(g: np.ndarray, y: np.ndarray, centre: float, width: float) -> list[float]:
    """The jump at ``centre`` as the gap between two polynomials fitted to the ``h`` depths on each side only
    (outside the switch, ``|g - centre| > 2 w``), for each ``(h, degree)`` of ``LOCAL_FITS`` that both sides
    have: the two-line fit over all depths absorbs a curved background into the gap, a local fit much less
    (as in a regression discontinuity design).

    Parameters
    ----------
    g : numpy.ndarray
        The fitted depths' gamma.
    y : numpy.ndarray
        The profile at those depths.
    centre : float
        The jump's centre ``gamma_c``.
    width : float
        The switch's width ``w`` (0 for a step).

    Returns
    -------
    list of float
        One gap (right minus left at ``centre``) per fit of ``LOCAL_FITS`` that both sides have depths for; empty
        when none has.

    Examples
    --------
    A step of 0.2 on a straight line: every local fit (lines and quadratics) recovers it exactly, and a centre
    with too few depths on one side has none:

    >>> import numpy as np
    >>> from latentbook.analysis import transition
    >>> g = np.linspace(0.0, 1.0, 21)
    >>> y = 0.5 + 0.1 * g + 0.2 * (g > 0.5)
    >>> [round(gap, 6) for gap in transition.local_gaps(g, y, 0.525, 0.0)]
    [0.2, 0.2, 0.2, 0.2, 0.2]
    >>> transition.local_gaps(g, y, 0.1, 0.0)
    []
    """
    left = np.flatnonzero(g < centre - 2 * width)[::-1]
    right = np.flatnonzero(g > centre + 2 * width)
    gaps = []
    for h, degree in LOCAL_FITS:
        if len(left) < h or len(right) < h:
            continue  # pragma: no mutate: increasing local fits
        ends = [np.polyval(np.polyfit(g[side[:h]], y[side[:h]], degree), centre) for side in (left, right)]
        gaps.append(float(ends[1] - ends[0]))
    return gaps


def local_interval(
    g: np.ndarray,
    y: np.ndarray,
    fitted: np.ndarray,
    profiles: np.ndarray,
    centre: float,
    width: float,
    level: float,
) -> tuple[float, float]:
    """The hull of the local gaps' basic bootstrap intervals, ``d_j + [q_a, q_(1-a)]`` of ``d_j(profile) -
    d_j(fitted)`` over the perturbed ``profiles`` (``d_j``: the ``j``-th gap of ``local_gaps`` on ``y``), of the
    fits whose interval is at most ``LOCAL_PRECISION`` times as long as the shortest, widened to hold their
    ``d_j``; ``(nan, nan)`` where no local fit has the depths. Centred on the local estimates, not the global
    two-line gap, so a curved background that biases the global gap does not carry the interval with it; a fit
    far noisier than the best (a quadratic extrapolated across a wide switch) would add length, not coverage.
    On the coverage harness's planted profiles it brings the jump's coverage up to its level (appendix
    "Interval coverage").

    Parameters
    ----------
    g : numpy.ndarray
        The fitted depths' gamma.
    y : numpy.ndarray
        The profile at those depths.
    fitted : numpy.ndarray
        The jump model's curve at those depths.
    profiles : numpy.ndarray
        The perturbed profiles, shape ``(n_profiles, len(g))``.
    centre : float
        The jump's centre ``gamma_c``.
    width : float
        The switch's width ``w`` (0 for a step).
    level : float
        Coverage of the intervals.

    Returns
    -------
    tuple of float
        ``(low, high)``, or ``(nan, nan)``.

    Examples
    --------
    Perturbed copies (noise 0.01) of a step of 0.2 on a line give an interval around 0.2; a centre with too
    few depths on one side gives none:

    >>> import numpy as np
    >>> from latentbook.analysis import transition
    >>> g = np.linspace(0.0, 1.0, 21)
    >>> y = 0.5 + 0.1 * g + 0.2 * (g > 0.5)
    >>> profiles = y + 0.01 * np.random.default_rng(0).standard_normal((50, 21))
    >>> low, high = transition.local_interval(g, y, y, profiles, 0.525, 0.0, 0.9)
    >>> bool(0.15 < low < 0.2 < high < 0.25)
    True
    >>> transition.local_interval(g, y, y, profiles, 0.1, 0.0, 0.9)
    (nan, nan)
    """
    own = local_gaps(g, y, centre, width)
    if not own:
        return math.nan, math.nan
    base = np.array(local_gaps(g, fitted, centre, width))
    deviations = np.array([local_gaps(g, row, centre, width) for row in profiles]) - base
    alpha = (1 - level) / 2
    low = np.asarray(own) + np.quantile(deviations, alpha, axis=0)
    high = np.asarray(own) + np.quantile(deviations, 1 - alpha, axis=0)
    kept = (high - low) <= LOCAL_PRECISION * (high - low).min()
    gaps = np.asarray(own)[kept]
    return float(min(low[kept].min(), gaps.min())), float(max(high[kept].max(), gaps.max()))


def _ar1_noise(residuals: np.ndarray, n_draws: int, rng: np.random.Generator, dof: int) -> np.ndarray:
    """Gaussian AR(1) series with the residuals' s.d. (``RSS / dof``) and lag-1 autocorrelation, corrected for its
    downward bias in short series (Kendall 1954: ``E rho^ ~ rho - (1 + 3 rho) / n``) and clipped to ``[0, 0.95]``."""
    r = residuals - residuals.mean()
    sd = float(np.sqrt(np.sum(r**2) / max(dof, 1)))  # pragma: no mutate: degrees of freedom floor
    raw = float(np.sum(r[1:] * r[:-1]) / max(np.sum(r**2), 1e-300))
    rho = float(np.clip(raw + (1 + 3 * raw) / len(r), 0.0, 0.95))
    e = rng.standard_normal((n_draws, len(r)))
    for i in range(1, len(r)):
        # equivalent mutants here: the innovation's sign
        e[:, i] = rho * e[:, i - 1] + np.sqrt(1 - rho**2) * e[:, i]  # pragma: no mutate
    return sd * e


def _hull_interval(
    low_draws: np.ndarray, high_draws: np.ndarray, own: tuple[float, float], level: float
) -> tuple[float, float]:
    """``[q_(1-level)/2 of low_draws, q_(1+level)/2 of high_draws]``, widened to contain the estimate's own span."""
    alpha = (1 - level) / 2
    low = float(np.quantile(low_draws, alpha))
    high = float(np.quantile(high_draws, 1 - alpha))
    return min(low, float(own[0])), max(high, float(own[1]))


def _no_transition_reason(
    amplitude: float, noise: float, delta_bic: dict[str, float], min_amplitude: float
) -> str:
    """Empty when the criterion of ``critical_depth`` holds; otherwise the first test that fails, in words."""
    weakest = min(delta_bic, key=delta_bic.get)
    if delta_bic[weakest] < BIC_MARGIN:
        return (
            f"a {weakest} model explains m(gamma) about as well as a jump "
            f"(BIC difference {delta_bic[weakest]:.1f} < {BIC_MARGIN:.0f})"
        )
    if abs(amplitude) < NOISE_FACTOR * noise or abs(amplitude) < min_amplitude:
        return (
            f"the jump {amplitude:+.4f} is below {NOISE_FACTOR:.0f} x noise ({NOISE_FACTOR * noise:.4f}) "
            f"or min_amplitude ({min_amplitude:.4f})"
        )
    return ""


def _as_profile(
    gamma: np.ndarray | Capture, m: np.ndarray | None, draws: np.ndarray | None, n_boot: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    if m is None:
        if hasattr(gamma, "omega_samples"):
            from .omega_profiles import profile

            prof = profile(gamma, n_boot=max(int(n_boot), 100), seed=seed)
            gamma, m, draws = prof.gamma, prof.m, prof.draws
        elif hasattr(gamma, "omega_mean"):
            gamma, m = gamma.gamma, gamma.omega_mean()
        else:
            raise InvalidInputError("Pass gamma and m (one value per depth), or a Capture alone.")
    g = np.asarray(gamma, dtype=np.float64)
    v = np.asarray(m, dtype=np.float64)
    if g.ndim != 1 or g.shape != v.shape:
        raise InvalidInputError(
            f"gamma and m must be 1-D of the same length, got shapes {g.shape} and {v.shape}."
        )
    if not (np.all(np.isfinite(g)) and np.all(np.isfinite(v))):
        raise InvalidInputError("gamma and m must be finite; drop depths with NaN before fitting.")
    if np.any(np.diff(g) <= 0):
        raise InvalidInputError("gamma must be strictly increasing (one value per depth, in order).")
    if draws is not None:
        draws = np.asarray(draws, dtype=np.float64)
        if draws.ndim != 2 or draws.shape[1] != len(g) or len(draws) < 20:
            raise InvalidInputError(
                f"draws must have shape (n_draws >= 20, {len(g)}) (one bootstrap profile per row), "
                f"got {draws.shape}."
            )
        if not np.all(np.isfinite(draws)):
            raise InvalidInputError("draws must be finite.")
    return g, v, draws
