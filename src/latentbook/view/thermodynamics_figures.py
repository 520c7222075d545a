"""Chapter 2's figure of attention per head against depth: each model beside its random-weight twin, the
normalised entropy in one panel and the effective inverse temperature in the other. Numbers in, labelled axes
out (as ``view.plots``).

Introduced in: chapter 2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from .plots import head_scatter, palette

ENTROPY_LABEL = r"normalised entropy $H/\log n$"
BETA_LABEL = r"$\beta_{\mathrm{eff}}$ = std of logits (nats)"


def per_head_grid(
    heads: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray]], names: Sequence[str]
) -> plt.Figure:
    """One row per model of ``names``: every head's normalised entropy (left) and ``beta_eff`` (right) against
    depth, as dots with the head mean as a line, for the model and its ``random:`` twin (dashed);
    ``heads[label]`` is ``(gamma, entropy, beta_eff)`` (``thermodynamics_tables.head_statistics``). The panels
    carry no legend: place one for all of them under the figure (``plots.legend_below``) once it is laid out."""
    fig, axes = plt.subplots(len(names), 2, figsize=(7.5, 10 / 3 * len(names)), sharex=True, squeeze=False)
    colours = palette(list(heads))
    for row, name in zip(axes, names):
        for label in (name, f"random:{name}"):
            gamma, entropy, beta = heads[label]
            head_scatter(gamma, entropy, ENTROPY_LABEL, label=label, ax=row[0], color=colours[label])
            head_scatter(gamma, beta, BETA_LABEL, label=label, ax=row[1], color=colours[label])
        row[0].set_title(name)
    fig.suptitle("Attention per head against depth\n(dots: heads; lines: head mean; dashed: random weights)")
    for ax in axes.flat:
        ax.get_legend().remove()
    return fig
