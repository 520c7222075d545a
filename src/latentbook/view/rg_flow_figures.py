"""Figures of the RG-flow chapter: the transverse variance of a planted contracting chain against Theorem 6.1's
``q^{2n}``, and the correlation of tokens against their distance in the prompt, by depth. Numbers in, labelled
axes out (as ``view.plots``).

Introduced in: chapter 5.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..errors import InvalidInputError
from .plots import depth_profiles, legend

if TYPE_CHECKING:
    from ..study.chapters.rg_flow_tables import DistanceProfile

MARKERS = "os^vD"


def planted_decay(variances: Mapping[str, np.ndarray], q: float, *, ax: Axes | None = None) -> Axes:
    """Each chain's transverse variance over its start (``flow.transverse_variance``), one marker per layer
    ``n``, against Theorem 6.1's ``q^{2n}`` (a straight line on the log scale)."""
    if not variances:
        raise InvalidInputError("planted_decay needs at least one chain's transverse variances.")
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 3.8))
    for i, (label, variance) in enumerate(variances.items()):
        variance = np.asarray(variance, dtype=np.float64)
        ax.plot(np.arange(len(variance)), variance / variance[0], MARKERS[i % len(MARKERS)], label=label)
    layers = np.arange(max(len(v) for v in variances.values()))
    ax.plot(layers, q ** (2 * layers), "k-", lw=1, label=r"Theorem 6.1: $q^{2n}$")
    ax.set_yscale("log")
    ax.set(
        xlabel="layers of the chain, $n$",
        ylabel="transverse variance / its start",
        title=f"Planted contraction, q = {q}",
    )
    legend(ax)
    return ax


def correlation_by_distance(
    profiles: Mapping[str, DistanceProfile], model: str, *, title: str, every: int = 3, cap: float = 1e3
) -> Figure:
    """Two stacked panels. Above, ``model``'s mean cosine ``C(r)`` against the distance ``r``, one line for
    every ``every``-th depth, coloured by depth; below, every run's correlation length against depth (log scale,
    a length that does not decay drawn at ``cap``). ``profiles`` as ``rg_flow_tables.distance_profile``."""
    shown = profiles[model]
    fig, axes = plt.subplots(2, 1, figsize=(7.2, 8))
    depth_colours = sns.color_palette("viridis", len(shown.gamma))
    distances = np.arange(shown.correlation.shape[1])
    for depth in range(0, len(shown.gamma), every):
        axes[0].plot(
            distances,
            shown.correlation[depth],
            color=depth_colours[depth],
            lw=1.2,
            label=f"$\\gamma$ = {shown.gamma[depth]:.2f}",
        )
    axes[0].set(xlabel="distance $r$ (tokens)", ylabel="mean cosine $C(r)$ of centred vectors", title=title)
    legend(axes[0], ncol=2)
    depth_profiles(
        {label: (p.gamma, np.minimum(p.length, cap)) for label, p in profiles.items()},
        r"correlation length $\xi$ (tokens)",
        ax=axes[1],
        logy=True,
    )
    legend(axes[1])
    fig.tight_layout()
    return fig
