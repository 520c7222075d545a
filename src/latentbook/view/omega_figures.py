"""Chapter 3's figures of object integrity Omega: noise with a few huge coordinates, ``m(gamma)`` with its
bootstrap band beside the model's twin and shuffled run, and ``m`` beside its nulls. Numbers in, labelled
axes out (as ``view.plots``): each draws one panel on ``ax`` (a new figure when omitted) and returns it.

Introduced in: chapter 3.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.axes import Axes

from ..analysis import omega
from .plots import depth_profiles

if TYPE_CHECKING:
    from ..analysis.omega_profiles import Profile

MEAN_OMEGA = r"mean $\Omega$"
NULL_LINES = (  # column of omega_tables.null_tables, colour, line width, what it is
    ("sample", "C0", None, "tokens"),
    ("permutation", "C3", None, "coordinates permuted"),
    ("gaussian", "C2", 1, "Gaussian, same covariance"),
)
STANDARDISED_LINES = (  # column of omega_tables.null_tables, style, colour, line width, label
    ("sample", "-", "C0", None, r"$m$: tokens"),
    ("permutation", "--", "C3", None, r"$m_\mathrm{perm}$: coordinates permuted"),
    ("standardised", ":", "C1", None, r"$m_s$: mean and standard deviation"),
    ("m_z", "-", "C2", 2, r"$m_z$: median and MAD"),
)


def _ax(ax: Axes | None) -> Axes:
    return plt.subplots(figsize=(6.5, 3.8))[1] if ax is None else ax


def boosted_omega_curves(curves: pd.DataFrame, d: int, *, ax: Axes | None = None) -> Axes:
    """Mean Omega of Gaussian vectors of width ``d`` against the size ``c`` of their massive coordinates (log
    scale), one line per number ``j`` of them (``omega_tables.boosted_curves``: ``c`` the index, ``j`` the
    columns), with the Gaussian value at ``d``."""
    ax = _ax(ax)
    for j in curves.columns:
        ax.plot(curves.index, curves[j], label=f"{j} massive coordinate{'s' if j > 1 else ''}")
    ax.axhline(omega.reference_values(d)["gaussian"], color="grey", ls=":", lw=1, label="Gaussian")
    ax.set_xscale("log")
    ax.set(
        xlabel=r"size $c$ of the massive coordinates (in units of the others' s.d.)",
        ylabel=MEAN_OMEGA,
        title=f"Gaussian vectors, d = {d}, with a few huge coordinates",
    )
    return ax


def profile_panel(
    profiles: Mapping[str, Profile],
    name: str,
    ylabel: str,
    gaussian: float,
    *,
    ax: Axes | None = None,
    captured: Profile | None = None,
) -> Axes:
    """``m(gamma)`` with its bootstrap band for every run of model ``name`` in ``profiles`` (the model, its
    ``random:`` twin, its ``(shuffled)`` run), beside the Gaussian value ``gaussian``, titled ``name``; with
    ``captured``, the model's profile as captured drawn in grey beside them."""
    runs = [label for label in profiles if label in (name, f"random:{name}", f"{name} (shuffled)")]
    ax = depth_profiles(
        {label: (profiles[label].gamma, profiles[label].m) for label in runs},
        ylabel,
        bands={label: (profiles[label].low, profiles[label].high) for label in runs},
        reference=(gaussian, r"Gaussian $1-\sqrt{2/\pi}$"),
        title=name,
        ax=_ax(ax),
    )
    if captured is not None:
        ax.plot(captured.gamma, captured.m, color="grey", lw=1, alpha=0.6, label=f"{name}, as captured")
    return ax


def null_panel(null_tables: Mapping[str, pd.DataFrame], name: str, *, ax: Axes | None = None) -> Axes:
    """Mean Omega against depth of model ``name``'s tokens, of the same tokens with every coordinate permuted
    across them, and of Gaussian vectors of their covariance (``omega_tables.null_tables``); solid for the model,
    dashed for its ``random:`` twin."""
    ax = _ax(ax)
    for label, style in ((name, "-"), (f"random:{name}", "--")):
        table = null_tables[label]
        for column, colour, width, what in NULL_LINES:
            ax.plot(table["gamma"], table[column], style, color=colour, lw=width, label=f"{label}: {what}")
    ax.set(title=name, xlabel=r"depth $\gamma$", ylabel=MEAN_OMEGA)
    return ax


def standardised_panel(table: pd.DataFrame, title: str, *, ax: Axes | None = None) -> Axes:
    """One capture's raw ``m``, its coordinate-permuted ``m_perm``, the SD-standardised ``m_s`` and the verdict's
    robust ``m_z`` against depth (a table of ``omega_tables.null_tables``)."""
    ax = _ax(ax)
    for column, style, colour, width, label in STANDARDISED_LINES:
        ax.plot(table["gamma"], table[column], style, color=colour, lw=width, label=label)
    ax.set(title=title, xlabel=r"depth $\gamma$", ylabel=MEAN_OMEGA)
    return ax
