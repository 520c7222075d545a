"""The landmark figures of chapter 9: for each model, its runs' intrinsic dimension, relative update norm and
logit-lens KL against depth, with the massive-activation onset, any Omega jump and the paper's window
``0.42 +- 0.1`` marked on the shared gamma axis. Numbers in, labelled axes out (as ``view.plots``).
Introduced in: chapter 9.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from ..analysis.paper import PAPER_GAMMA_C
from ..analysis.verdict import GAMMA_C_TOLERANCE
from ..errors import InvalidInputError
from .plots import GAMMA_LABEL, legend, line_style, palette

if TYPE_CHECKING:
    from ..study.run_landmarks import DepthLandmarks


def plot_landmark_row(results: Mapping[str, DepthLandmarks], axes: Sequence[Axes], title: str) -> None:
    """Three panels on ``axes``: Gride ID, relative update norm and logit-lens KL (both log scale), one line per run of
    ``results`` with its 95 % band; vertical lines at each run's massive onset (solid) and Omega jump (dashed)
    when found; the paper's window shaded. An encoder's lens panel says it has no lens."""
    if len(axes) != 3 or not results:
        raise InvalidInputError("plot_landmark_row needs three axes and at least one run.")
    colours = palette(results)
    for label, result in results.items():
        style = dict(color=colours[label], ls=line_style(label), lw=1.4, marker="o", ms=2.5, label=label)
        panels = [
            (axes[0], result.id_gride.gamma, result.id_gride.dimension, result.id_gride.ci),
            (axes[1], result.updates.gamma, result.updates.mean, result.updates.ci),
        ]
        if result.lens is not None:
            panels.append((axes[2], result.lens.gamma[:-1], result.lens.mean[:-1], result.lens.ci[:-1]))
        for ax, gamma, values, ci in panels:
            ax.plot(gamma, values, **style)
            ax.fill_between(gamma, ci[:, 0], ci[:, 1], color=colours[label], alpha=0.15, lw=0)
            if result.onset.found:
                ax.axvline(result.onset.gamma, color=colours[label], lw=1.0, alpha=0.8)
            jump = result.omega_jump
            if jump is not None and jump.has_transition:
                ax.axvline(jump.gamma_c, color=colours[label], lw=1.0, ls="--")
    if not any(result.lens is not None for result in results.values()):
        axes[2].text(
            0.5,
            0.5,
            "no logit lens:\nan encoder has no\nlanguage-model head",
            ha="center",
            va="center",
            transform=axes[2].transAxes,
            color="grey",
        )
    else:
        axes[2].set_yscale("log")
    axes[1].set_yscale("log")  # the first block's update dwarfs the rest
    ylabels = ("intrinsic dimension (Gride)", "relative update norm", "logit-lens KL to the output (nats)")
    for ax, ylabel in zip(axes, ylabels):
        ax.axvspan(
            PAPER_GAMMA_C - GAMMA_C_TOLERANCE, PAPER_GAMMA_C + GAMMA_C_TOLERANCE, color="grey", alpha=0.12
        )
        ax.set(xlabel=GAMMA_LABEL, ylabel=ylabel, xlim=(-0.02, 1.02))
    axes[0].set_title(title, loc="left")
    legend(axes[0])


def plot_landmarks(results: Mapping[str, DepthLandmarks], models: Sequence[str]) -> plt.Figure:
    """One ``plot_landmark_row`` per model of ``models`` (three stacked panels each, titled by the model), of the
    runs of ``results`` whose label names it (trained, random twin, shuffled); a shared gamma axis."""
    fig, axes = plt.subplots(3 * len(models), 1, figsize=(7.2, 8.4 * len(models)), sharex=True)
    for row, model in zip(axes.reshape(len(models), 3), models):
        plot_landmark_row({label: r for label, r in results.items() if model in label}, row, model)
    fig.tight_layout()
    return fig
