"""Figures of covariance spectra: an empirical spectral density against its fitted Marchenko–Pastur law, and
the BBP picture of where a planted spike lands. Numbers in, labelled axes out (as ``view.plots``).

Introduced in: chapter 4.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes

from ..analysis import bulk_fit, mp_law
from ..errors import InvalidInputError
from .plots import legend


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
