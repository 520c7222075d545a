"""The panels of the explorers: what each metric shows at one depth, as plotly traces (plain dicts).

``omega_panel``, ``spectrum_panel``, ``attention_panel`` and ``separability_panel`` each turn the numbers of one
depth into the traces both explorers draw (``widgets.explore``, live, and ``static_explorer``, with no kernel);
``view.explorer.ModelViews`` calls them once per depth and keeps the result. ``METRICS`` names the four metrics:

- ``omega``: the distribution of object integrity ``Omega(h) = 1 - ||h||_1 / (sqrt(d) ||h||_2)`` over all
  captured tokens at depth ``l``, against the Gaussian reference: the distribution of Omega for i.i.d.
  ``N(0, I_d)`` vectors of the same ``d`` (mean ``~ 1 - sqrt(2/pi) = 0.2021``). book/paper.md, "Order parameter".
- ``spectrum``: the eigenvalues of the token covariance ``C^(l)`` (log10 scale) against the
  Marchenko–Pastur law fitted to their bulk (``bulk_fit.mp_fit`` with the effective sample size), and the
  spikes beyond its edge. book/paper.md, "Spectral density", claim 3.
- ``attention``: the mean attention entropy ``H = -sum_j p_j log p_j`` of each head of layer ``l``, beside
  ``log(n_keys)``, the entropy of uniform attention. book/paper.md, "Attention thermodynamics".
- ``separability``: on the labelled ``binding`` set (``prompts.reasoning``), the cross-validated
  nearest-centroid accuracy of the value each token carries, per reasoning step, against depth, with the
  chance level and depth ``l`` marked (``classes.separability_profile``). book/paper.md, claim 5.

Introduced in: the explorer page of the book (``book/explorer.md``) and the labs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
import torch

from ..capturing.accumulators import omega_of
from ..capturing.results import Capture
from ..errors import InvalidInputError

if TYPE_CHECKING:
    from ..analysis.classes import SeparabilityProfile

GAUSSIAN_OMEGA = 1.0 - math.sqrt(2.0 / math.pi)


@dataclass(frozen=True)
class Metric:
    """One thing the explorers can show: its menu label and axis titles."""

    key: str
    label: str
    x_title: str
    y_title: str


METRICS: dict[str, Metric] = {
    m.key: m
    for m in (
        Metric("omega", "Omega distribution", "Omega (object integrity)", "density"),
        Metric(
            "spectrum",
            "Eigenvalue spectrum",
            "log10 eigenvalue of the covariance",
            "density (per log10 unit)",
        ),
        Metric("attention", "Attention entropy per head", "head", "mean attention entropy (nats)"),
        Metric("separability", "Class separability", "depth gamma = l / L", "nearest-centroid accuracy"),
    )
}

_COLORS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")


def _list(values) -> list[float]:
    """Plain floats with 4 significant digits (small JSON; NaN becomes None, which plotly leaves out)."""
    return [None if not math.isfinite(v) else float(f"{v:.4g}") for v in np.asarray(values, float).ravel()]


# --- omega ----------------------------------------------------------------------------------------------------


@lru_cache(maxsize=16)
def gaussian_omega_counts(d: int, bins: int, n: int = 8192, seed: int = 0) -> np.ndarray:
    """Histogram on ``bins`` equal bins of [0, 1] of Omega of ``n`` i.i.d. ``N(0, I_d)`` vectors (seeded)."""
    generator = torch.Generator().manual_seed(seed)
    omega = omega_of(torch.randn(n, d, generator=generator, dtype=torch.float64))
    return torch.histc(omega, bins=bins, min=0.0, max=1.0).numpy()


def omega_panel(cap: Capture, layer: int) -> list[dict]:
    """Omega histogram of every captured token at ``layer`` (density), the Gaussian reference, its mean.

    Shown on the bins of the capture's histogram that hold either distribution, two bins of margin.
    """
    edges, counts = cap.omega_histogram(layer)
    reference = gaussian_omega_counts(cap.d_model, len(counts))
    width = edges[1] - edges[0]
    used = np.flatnonzero((counts > 0) | (reference > 0))
    lo, hi = max(used[0] - 2, 0), min(used[-1] + 3, len(counts))
    centres = 0.5 * (edges[:-1] + edges[1:])[lo:hi]
    density = counts[lo:hi] / (counts.sum() * width)
    ref_density = reference[lo:hi] / (reference.sum() * width)
    return [
        dict(
            type="bar",
            name=f"tokens at this depth ({cap.n_tokens} tokens)",
            x=_list(centres),
            y=_list(density),
            marker=dict(color=_COLORS[0]),
            opacity=0.75,
        ),
        dict(
            type="scatter",
            mode="lines",
            name=f"Gaussian N(0, I_{cap.d_model})",
            x=_list(centres),
            y=_list(ref_density),
            line=dict(color=_COLORS[1], width=2),
        ),
        dict(
            type="scatter",
            mode="lines",
            name="1 - sqrt(2/pi) = 0.2021",
            x=[GAUSSIAN_OMEGA, GAUSSIAN_OMEGA],
            y=[0.0, _list([max(density.max(), ref_density.max())])[0]],
            line=dict(color=_COLORS[1], width=1, dash="dot"),
        ),
    ]


# --- spectrum -------------------------------------------------------------------------------------------------


def spectrum_panel(eigvals: np.ndarray, n_samples: float, bins: int = 60) -> list[dict]:
    """Histogram of ``log10`` eigenvalues, the fitted MP law in the same coordinates, and its spikes.

    The density of ``u = log10 lambda`` is ``rho(lambda) lambda ln 10``; the MP curve is scaled by the
    fraction of eigenvalues in its continuous bulk, ``(d - k) min(1, N/(d - k)) / d``, so both integrate to
    the share of the spectrum they describe. Eigenvalues below ``1e-9`` of the largest are drawn at that floor.
    If the bulk cannot be fitted (a degenerate spectrum), the MP curve and spikes are left empty.
    """
    from ..analysis import bulk_fit, mp_law

    lam = np.sort(np.asarray(eigvals, dtype=np.float64))[::-1]
    d = len(lam)
    floor = lam[0] * 1e-9
    u = np.log10(np.maximum(lam, floor))
    counts, edges = np.histogram(u, bins=bins)
    density = counts / (d * (edges[1] - edges[0]))
    mp_x: list[float] = []
    mp_y: list[float] = []
    spike_x: list[float] = []
    try:
        fit = bulk_fit.mp_fit(lam, n_samples)
    except InvalidInputError:
        fit = None
    if fit is not None:
        lo, hi = fit.edges
        grid = np.linspace(max(lo, floor), hi, 200)
        share = (d - fit.n_spikes) * min(1.0, 1.0 / fit.ratio) / d
        rho = mp_law.mp_density(grid, fit.ratio, fit.sigma2) / min(1.0, 1.0 / fit.ratio)
        mp_x, mp_y = _list(np.log10(grid)), _list(share * rho * grid * math.log(10))
        spike_x = _list(np.log10(fit.spikes))
    return [
        dict(
            type="bar",
            name="eigenvalues of C at this depth",
            x=_list(0.5 * (edges[:-1] + edges[1:])),
            y=_list(density),
            marker=dict(color=_COLORS[0]),
            opacity=0.75,
        ),
        dict(
            type="scatter",
            mode="lines",
            name="Marchenko–Pastur fit of the bulk",
            x=mp_x,
            y=mp_y,
            line=dict(color=_COLORS[1], width=2),
        ),
        dict(
            type="scatter",
            mode="markers",
            name="spikes beyond the MP edge",
            x=spike_x,
            y=[0.0] * len(spike_x),
            marker=dict(color=_COLORS[3], symbol="triangle-up", size=10),
        ),
    ]


# --- attention ------------------------------------------------------------------------------------------------


def attention_panel(attention, layer: int) -> list[dict]:
    """Mean entropy of each head of layer ``layer`` (depth ``l`` is the output of layer ``l``) and
    ``log(n_keys)`` (uniform attention). Depth 0, the embeddings, has no attention: empty traces."""
    heads: list[float] = []
    entropy: list[float] = []
    uniform: list[float] = []
    if layer > 0:
        values = attention.entropy()[layer - 1]
        heads = list(range(len(values)))
        entropy, uniform = _list(values), _list(attention.log_keys()[layer - 1])
    return [
        dict(type="bar", name="entropy of the head", x=heads, y=entropy, marker=dict(color=_COLORS[0])),
        dict(
            type="scatter",
            mode="markers",
            name="log(n_keys): uniform attention",
            x=heads,
            y=uniform,
            marker=dict(color=_COLORS[1], symbol="line-ew-open", size=18, line=dict(width=3)),
        ),
    ]


# --- class separability ---------------------------------------------------------------------------------------


def separability_panel(profile: SeparabilityProfile, gamma: np.ndarray, layer: int) -> list[dict]:
    """Accuracy against depth for each step, the chance level, and markers at depth ``layer``."""
    traces = [
        dict(
            type="scatter",
            mode="lines",
            name=name,
            x=_list(gamma),
            y=_list(row),
            line=dict(color=_COLORS[i % len(_COLORS)], width=2),
        )
        for i, (name, row) in enumerate(zip(profile.step_names, profile.accuracy))
    ]
    traces.append(
        dict(
            type="scatter",
            mode="lines",
            name="chance",
            x=[0.0, 1.0],
            y=[_list([profile.chance.max()])[0]] * 2,
            line=dict(color="#444444", width=1, dash="dot"),
        )
    )
    traces.append(
        dict(
            type="scatter",
            mode="markers",
            name="this depth",
            x=[_list([gamma[layer]])[0]] * len(profile.accuracy),
            y=_list(profile.accuracy[:, layer]),
            marker=dict(color="#222222", size=10, symbol="circle-open", line=dict(width=2)),
        )
    )
    return traces


def metric_info(metric: str) -> Metric:
    """The ``Metric`` named ``metric``, or an error that lists the metrics there are."""
    if metric not in METRICS:
        raise InvalidInputError(f"Unknown metric {metric!r}: choose one of {list(METRICS)}.")
    return METRICS[metric]


def title(name: str, views, layer: int) -> str:
    """The figure title of ``views`` (a ``view.explorer.ModelViews``) at depth ``layer``."""
    return f"{name} · depth l = {layer} of {views.n_layers} · gamma = {views.gamma[layer]:.2f}"
