"""Figures of covariance spectra: an empirical spectral density against its fitted Marchenko–Pastur law (alone
or a grid of them), the BBP picture of where a planted spike lands, and spectral summaries against depth (the
sink's share, the spread against noise, the mean direction). Numbers in, labelled axes out (as ``view.plots``).

Introduced in: chapter 4.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..analysis import bulk_fit, mp_law
from ..errors import InvalidInputError
from .plots import GAMMA_LABEL, depth_profiles, legend, legend_below


def _ax(ax: Axes | None, size: tuple[float, float] = (6.0, 3.6)) -> Axes:
    if ax is None:
        _, ax = plt.subplots(figsize=size)
    return ax


def esd_against_mp(
    eigvals: np.ndarray,
    fit: bulk_fit.MPFit,
    *,
    label: str,
    log: bool = False,
    bins: int = 60,
    units: str = "squared residual units",
    ax: Axes | None = None,
    color=None,
) -> Axes:
    """Histogram of the nonzero eigenvalues and the fitted MP density ``rho(lambda)``, with the spike cut.

    ``log=True`` puts ``log10 lambda`` on the x axis; the histogram then shows the density of ``log10 lambda``
    and the law is drawn as ``rho(lambda) * lambda * ln 10`` (the same law, changed variable).
    The law is scaled by the bulk's share of the nonzero eigenvalues, so bulk and histogram compare directly.
    """
    lam = np.asarray(eigvals, dtype=np.float64)
    lam = lam[lam > 1e-12 * lam.max()]
    if lam.size < 2:
        raise InvalidInputError("esd_against_mp needs at least two nonzero eigenvalues.")
    ax = _ax(ax)
    weight = len(fit.bulk) / lam.size / min(1.0, 1.0 / fit.ratio)
    lo, hi = fit.edges
    grid = np.linspace(max(lo, 1e-12 * hi), hi, 600)[1:-1]
    density = mp_law.mp_density(grid, fit.ratio, fit.sigma2) * weight
    if log:
        ax.hist(
            np.log10(lam), bins=bins, density=True, color=color, alpha=0.45, label=f"{label}: eigenvalues"
        )
        ax.plot(np.log10(grid), density * grid * np.log(10), color="black", lw=1.4, label="fitted MP law")
        ax.axvline(np.log10(fit.threshold), color="crimson", ls="--", lw=1, label="spike cut")
        ax.set(
            xlabel=rf"$\log_{{10}} \lambda$ ($\lambda$ in {units})", ylabel=r"density of $\log_{10}\lambda$"
        )
    else:
        ax.hist(lam, bins=bins, density=True, color=color, alpha=0.45, label=f"{label}: eigenvalues")
        ax.plot(grid, density, color="black", lw=1.4, label="fitted MP law")
        ax.axvline(fit.threshold, color="crimson", ls="--", lw=1, label="spike cut")
        ax.set(xlabel=rf"eigenvalue $\lambda$ ({units})", ylabel=r"density $\rho(\lambda)$")
    legend(ax)
    return ax


def bbp_sweep(
    population: np.ndarray,
    observed: np.ndarray,
    sigma2: float,
    ratio: float,
    *,
    ax: Axes | None = None,
) -> Axes:
    """Largest sample eigenvalue against the planted population eigenvalue, with the BBP prediction.

    Theory: ``mp_law.spike_location`` (the upper MP edge below the threshold ``sigma2 (1 + sqrt q)``, then
    ``sigma2 (1 + theta)(1 + q / theta)``); the identity line shows what a naive reading would expect.
    """
    population = np.asarray(population, dtype=np.float64)
    observed = np.asarray(observed, dtype=np.float64)
    if population.shape != observed.shape or population.ndim != 1:
        raise InvalidInputError("population and observed must be 1-D arrays of the same length.")
    ax = _ax(ax)
    grid = np.linspace(population.min(), population.max(), 400)
    ax.plot(grid, mp_law.spike_location(grid, sigma2, ratio), color="black", lw=1.4, label="BBP theory")
    ax.plot(grid, grid, color="grey", ls=":", lw=1, label=r"$\lambda = \ell$")
    ax.plot(population, observed, "o", ms=5, color="tab:blue", label="largest sample eigenvalue")
    ax.axvline(mp_law.bbp_threshold(sigma2, ratio), color="crimson", ls="--", lw=1, label="BBP threshold")
    ax.axhline(mp_law.mp_edges(ratio, sigma2)[1], color="grey", ls="--", lw=1, label="MP upper edge")
    ax.set(
        xlabel=r"planted population eigenvalue $\ell$ (noise variance units)",
        ylabel=r"sample eigenvalue $\lambda$ (noise variance units)",
    )
    legend(ax)
    return ax


def esd_grid(
    panels: Mapping[str, tuple[np.ndarray, bulk_fit.MPFit]],
    *,
    ncols: int = 2,
    colors: Sequence | None = None,
    units: str = "squared residual units",
) -> Figure:
    """One ``esd_against_mp`` panel on a log scale per entry of ``panels`` (its title -> eigenvalues and their
    fit), in rows of ``ncols``, ``colors`` one per panel; one legend for them all, under the grid."""
    if not panels or (colors is not None and len(colors) != len(panels)):
        raise InvalidInputError("esd_grid needs at least one panel and, if colors are given, one per panel.")
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(7.5, 3.4 * nrows), squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.remove()
    colors = [None] * len(panels) if colors is None else colors
    for ax, (title, (eigvals, fit)), color in zip(axes.flat, panels.items(), colors):
        esd_against_mp(eigvals, fit, label=title, log=True, units=units, ax=ax, color=color)
        ax.set_title(title, fontsize="medium")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    for ax in fig.axes:
        ax.get_legend().remove()
    fig.tight_layout()
    legend_below(fig, handles, ["eigenvalues", *labels[1:]])
    return fig


def sink_against_sample(
    all_tokens: Mapping[str, pd.DataFrame],
    sample: Mapping[str, pd.DataFrame],
    *,
    title: str,
    ax: Axes | None = None,
) -> Axes:
    """Per model (the keys of ``all_tokens``), in one colour: the participation ratio against depth of the
    covariance of all tokens (solid; ``spectra_tables.streamed_profile``) and of the token sample without
    position 0 (dashed; ``token_sample_spectrum_profile``), on a log scale, the legend under the axes."""
    ax = _ax(ax, (7.5, 4.2))
    colours = sns.color_palette("colorblind", len(all_tokens))
    for colour, name in zip(colours, all_tokens):
        for source, profile, style in (
            ("all tokens", all_tokens[name], "-"),
            ("sample without position 0", sample[name], "--"),
        ):
            ax.plot(
                profile["gamma"].to_numpy(),
                profile["participation_ratio"].to_numpy(),
                style,
                marker="o",
                ms=3,
                color=colour,
                label=f"{name}, {source}",
            )
    ax.set_yscale("log")
    ax.set(xlabel=GAMMA_LABEL, ylabel="participation ratio (dimensions)", title=title)
    ax.legend(frameon=False, fontsize="small", ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    ax.figure.tight_layout()
    return ax


def spread_against_depth(
    profiles: Mapping[str, pd.DataFrame], noise: Mapping[str, pd.DataFrame], *, gamma_c: float
) -> Figure:
    """Four panels against depth, one line per ``token_sample_spectrum_profile`` (twins dashed): spikes above
    the fitted MP bulk; effective rank and participation ratio, each over the mean of its model's Gaussian
    reference (``noise[label]``, 1 = as spread as noise); the largest coordinate variance over the median.
    A dash-dot line marks ``gamma_c``; one legend, on the first panel."""
    fig, axes = plt.subplots(2, 2, figsize=(7.5, 7.5))
    axes = axes.ravel()

    def lines(column: str, over_noise: bool = False) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        return {
            label: (
                p["gamma"].to_numpy(),
                p[column].to_numpy() / (noise[label][column].mean() if over_noise else 1.0),
            )
            for label, p in profiles.items()
        }

    noise_level = (1.0, "Gaussian noise")
    depth_profiles(lines("n_spikes"), "spikes above the fitted MP bulk (count)", ax=axes[0])
    depth_profiles(
        lines("effective_rank", True), "effective rank / that of noise", ax=axes[1], reference=noise_level
    )
    depth_profiles(
        lines("participation_ratio", True),
        "participation ratio / that of noise",
        ax=axes[2],
        reference=noise_level,
    )
    depth_profiles(lines("top_coordinate"), "largest coordinate variance / median", ax=axes[3], logy=True)
    for ax in axes:
        ax.axvline(gamma_c, color="grey", lw=1, ls="-.")
    for ax in axes[1:]:
        ax.get_legend().remove()
    legend(axes[0])
    axes[0].set_title(rf"dash-dot: the paper's $\gamma_c = {gamma_c}$", fontsize="medium")
    fig.tight_layout()
    return fig


def mean_direction_against_depth(profiles: Mapping[str, pd.DataFrame]) -> Figure:
    """Two stacked panels against depth, one line per ``token_sample_spectrum_profile``: the mean's share of the
    second moment, ``||mu||^2 / E||h||^2``, and the uncentred participation ratio over the centred one (log)."""
    fig, axes = plt.subplots(2, 1, figsize=(7.2, 8))
    depth_profiles(
        {k: (p["gamma"].to_numpy(), p["mean_share"].to_numpy()) for k, p in profiles.items()},
        r"mean's share $\|\mu\|^2 / E\|h\|^2$",
        ax=axes[0],
    )
    depth_profiles(
        {
            k: (p["gamma"].to_numpy(), (p["pr_uncentred"] / p["participation_ratio"]).to_numpy())
            for k, p in profiles.items()
        },
        "PR uncentred / PR centred",
        ax=axes[1],
        logy=True,
    )
    for ax in axes:
        legend(ax)
    fig.tight_layout()
    return fig
