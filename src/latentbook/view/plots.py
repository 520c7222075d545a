"""Seaborn figures of the book: numbers in, labelled axes out.

Every function draws on ``ax`` (a new figure when omitted) and returns the ``Axes``; none computes a
statistic beyond arranging what it is given. Null models are drawn in a shade of their real model's
colour, so a reader pairs them at a glance: lighter and dashed for random weights (labels starting with
``random:``), darker and dotted for shuffled words (labels containing ``shuffled``).
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.ticker import FormatStrFormatter

from ..errors import InvalidInputError
from ..figure_standard import check_figures_on_show, legend, legend_below  # noqa: F401 (chapters call them here)

GAMMA_LABEL = r"depth $\gamma = l/L$"
GAUSSIAN_OMEGA = 1.0 - np.sqrt(2.0 / np.pi)


def _ax(ax: Axes | None, size: tuple[float, float] = (6.5, 3.8)) -> Axes:
    if ax is None:
        _, ax = plt.subplots(figsize=size)
    return ax


def line_style(label: str) -> str:
    """Solid for a trained model, dashed for its random-weight twin, dotted for its shuffled-words run."""
    return "--" if label.startswith("random:") else ":" if "shuffled" in label else "-"


def _base(label: str) -> str:
    return label.removeprefix("random:").replace(" (shuffled)", "").replace("shuffled", "").strip()


MODEL_ORDER = (
    "smollm2-135m",
    "gemma3-270m",
    "minilm-l6",
)  # the embedded models keep their colours everywhere


def palette(labels) -> dict[str, tuple]:
    """One colour per real model (the embedded ones always the same); its random twin a lighter shade, its
    shuffled-words run a darker one, so a reader pairs them at a glance and still tells them apart."""
    seen = list(dict.fromkeys(_base(label) for label in labels))
    bases = [b for b in MODEL_ORDER if b in seen] + [b for b in seen if b not in MODEL_ORDER]
    order = list(MODEL_ORDER) + [b for b in bases if b not in MODEL_ORDER]
    colours = sns.color_palette("colorblind", len(order))
    base_colour = {b: colours[order.index(b)] for b in bases}

    def shade(label: str) -> tuple:
        rgb = np.array(base_colour[_base(label)])
        if label.startswith("random:"):
            return tuple(rgb + (1.0 - rgb) * 0.45)
        return tuple(rgb * 0.6) if "shuffled" in label else tuple(rgb)

    return {label: shade(label) for label in labels}


def depth_profiles(
    profiles: Mapping[str, tuple[np.ndarray, np.ndarray]],
    ylabel: str,
    *,
    title: str | None = None,
    ax: Axes | None = None,
    logy: bool = False,
    reference: tuple[float, str] | None = None,
    bands: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None,
) -> Axes:
    """One line per label: ``values`` against ``gamma``; null models dashed; optional horizontal reference.

    ``bands[label] = (low, high)`` shades an interval around that label's line (e.g. a bootstrap CI).
    """
    if not profiles:
        raise InvalidInputError("depth_profiles needs at least one (gamma, values) profile.")
    ax = _ax(ax)
    colours = palette(profiles)
    for label, (gamma, values) in profiles.items():
        ax.plot(
            gamma,
            values,
            marker="o",
            ms=3,
            lw=1.4,
            color=colours[label],
            ls=line_style(label),
            label=label,
        )
        if bands and label in bands:
            ax.fill_between(gamma, *bands[label], color=colours[label], alpha=0.2, lw=0)
    if reference is not None:
        ax.axhline(reference[0], color="grey", ls=":", lw=1, label=reference[1])
    if logy:
        ax.set_yscale("log")
    ax.set(xlabel=GAMMA_LABEL, ylabel=ylabel, title=title)
    legend(ax)
    return ax


def head_scatter(
    gamma: np.ndarray, values: np.ndarray, ylabel: str, *, label: str, ax: Axes | None = None, color=None
) -> Axes:
    """Every head as a dot (``values`` of shape ``(L, H)`` at ``gamma`` of shape ``(L,)``) and the head mean as a line."""
    values = np.asarray(values, dtype=np.float64)
    gamma = np.asarray(gamma, dtype=np.float64)
    if values.ndim != 2 or values.shape[0] != gamma.shape[0]:
        raise InvalidInputError(
            f"values must be (layers, heads) with one row per gamma; got {values.shape}, {gamma.shape}."
        )
    ax = _ax(ax)
    color = color if color is not None else palette([label])[label]
    style = line_style(label)
    ax.scatter(np.repeat(gamma, values.shape[1]), values.ravel(), s=8, alpha=0.35, color=color, lw=0)
    ax.plot(gamma, np.nanmean(values, axis=1), ls=style, lw=1.8, color=color, label=f"{label} (head mean)")
    ax.set(xlabel=GAMMA_LABEL, ylabel=ylabel)
    legend(ax)
    return ax


def omega_violins(samples: Mapping[str, Mapping[float, np.ndarray]], *, ax: Axes | None = None) -> Axes:
    """Per-token Omega at a few depths: ``samples[label][gamma]`` is an array of Omega values; one violin each."""
    rows = [
        pd.DataFrame({"model": label, "gamma": f"{gamma:.2f}", "omega": np.asarray(values, dtype=np.float64)})
        for label, by_depth in samples.items()
        for gamma, values in by_depth.items()
    ]
    if not rows:
        raise InvalidInputError("omega_violins needs at least one model with at least one depth of samples.")
    frame = pd.concat(rows, ignore_index=True)
    ax = _ax(ax, (7.5, 4.0))
    sns.violinplot(
        data=frame,
        x="gamma",
        y="omega",
        hue="model",
        palette=palette(samples),
        cut=0,
        density_norm="width",
        inner="quartile",
        linewidth=0.8,
        ax=ax,
    )
    ax.axhline(GAUSSIAN_OMEGA, color="grey", ls=":", lw=1, label=r"Gaussian $1-\sqrt{2/\pi}$")
    ax.set(xlabel=GAMMA_LABEL + " (rounded)", ylabel=r"per-token $\Omega$")
    legend(ax)
    return ax


def coordinate_magnitudes(
    abs_max: Mapping[str, np.ndarray], *, ax: Axes | None = None, top: int = 40
) -> Axes:
    """Per-coordinate ``max |h_i|`` over tokens, sorted, relative to the median coordinate (log scale)."""
    ax = _ax(ax)
    colours = palette(abs_max)
    for label, values in abs_max.items():
        values = np.sort(np.asarray(values, dtype=np.float64))[::-1]
        ratio = values / np.median(values)
        rank = np.arange(1, min(top, len(ratio)) + 1)
        ax.plot(
            rank,
            ratio[: len(rank)],
            marker="o",
            ms=3,
            color=colours[label],
            ls=line_style(label),
            label=label,
        )
    ax.set_yscale("log")
    ax.set(xlabel="coordinate rank (largest first)", ylabel=r"$\max_t |h_i| \;/\;$ median over coordinates")
    legend(ax)
    return ax


def transition_fit(
    gamma: np.ndarray, m: np.ndarray, transition, *, label: str, ax: Axes | None = None, color=None
) -> Axes:
    """``m(gamma)`` as dots, the fitted jump model as a line over the depths it was fitted on, and ``gamma_c`` with
    its interval when there is a transition."""
    ax = _ax(ax)
    color = color if color is not None else palette([label])[label]
    ax.plot(gamma, m, "o", ms=4, color=color, label=f"{label}: $m(\\gamma)$")
    ax.plot(
        transition.fitted_gamma,
        transition.fitted,
        line_style(label),
        color=color,
        lw=1.2,
        label=f"{label}: jump fit",
    )
    if transition.has_transition:
        ax.axvspan(*transition.ci, color=color, alpha=0.15, lw=0)
        ax.axvline(transition.gamma_c, color=color, ls=":", lw=1)
    ax.set(xlabel=GAMMA_LABEL, ylabel=r"$m(\gamma)$, mean $\Omega$")
    legend(ax)
    return ax


def free_energy_curves(
    x: np.ndarray, gaps: np.ndarray, xlabel: str, *, ax: Axes | None = None, logx: bool = False
) -> Axes:
    """Free-energy excess ``F(p) - F_min`` along one-parameter families of rows: ``gaps`` is ``(curves, len(x))``."""
    gaps = np.atleast_2d(np.asarray(gaps, dtype=np.float64))
    if gaps.shape[1] != len(x):
        raise InvalidInputError(
            f"gaps must have one column per x; got {gaps.shape} for {len(x)} values of x."
        )
    ax = _ax(ax)
    for curve in gaps:
        ax.plot(x, curve, color="tab:blue", alpha=0.5, lw=1)
    ax.axhline(0.0, color="black", lw=0.8)
    if logx:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))  # 0.25 0.5 1 2 4, not 2^-2
    ax.set(xlabel=xlabel, ylabel=r"$F(p) - F_{\min}$ (nats)")
    return ax


VERDICT_CODES = {
    "holds": 4,
    "uninformative": 3,
    "inconclusive": 2,
    "does not hold": 1,
    "not testable here": 0,
    "not yet run": 0,
}
VERDICT_SHORT = {  # at most four characters: a cell of the grid is narrow with the ladder's columns beside
    "holds": "yes",
    "uninformative": "twin",
    "does not hold": "no",
    "inconclusive": "?",
    "not testable here": "n/t",
    "not yet run": "n/r",
}


def verdict_heatmap(glance: pd.DataFrame) -> plt.Figure:
    """Chapter 8's table at a glance (``study.verdict_table.summary``: claims as rows, runs as columns) as a heatmap
    coloured by verdict, each cell labelled in short; a cell whose rows disagree (``study.verdict_table.MIXED``) is
    "mix". Drawn at the content column's width (about 7 inches), each label four characters at most
    (``VERDICT_SHORT``), so that labels stay inside their cells beside the ladder's many columns."""
    from ..study.verdict_table import MIXED

    mixed = glance.apply(lambda col: col.astype(str).str.startswith(MIXED))
    numbers = glance.apply(lambda col: col.map(VERDICT_CODES)).astype(float).mask(mixed, 2.0)
    labels = (
        glance.apply(lambda col: col.map(lambda v: VERDICT_SHORT.get(v, ""))).fillna("").mask(mixed, "mix")
    )
    fig, ax = plt.subplots(figsize=(7.2, 0.32 * len(glance) + 2.2))
    sns.heatmap(
        numbers,
        annot=labels.to_numpy(),
        fmt="",
        cmap=sns.color_palette(["#d9d9d9", "#e34a33", "#fdbb84", "#9ecae1", "#31a354"]),
        vmin=-0.5,
        vmax=4.5,
        cbar=False,
        linewidths=0.5,
        linecolor="white",
        annot_kws={"fontsize": 7},
        ax=ax,
    )
    ax.set(
        xlabel="model run",
        ylabel="claim",
        title="yes = holds, twin = uninformative (the twin holds too), no = does not hold,\n"
        "? = inconclusive, n/t = not testable, n/r = not yet run, mix = its rows disagree",
    )
    ax.title.set_fontsize(9)
    ax.tick_params(labelsize=7)
    ax.set_xticklabels(ax.get_xticklabels(), rotation=40, ha="right")
    ax.grid(False)
    fig.tight_layout()
    return fig
