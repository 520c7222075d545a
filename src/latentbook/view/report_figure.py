"""The figure of ``latentbook report CAPTURE --plot PNG``: ``m(gamma)`` with its band, then the spectrum at a few
depths against the fitted Marchenko–Pastur law. Numbers in (``study.capture_report.Report``), a figure out.

``write_report_figure(report, path)`` draws it and writes the PNG atomically (``_files.atomic_write``); the caller
checks the path first (``check_plot_path``), so a bad path costs nothing.
Introduced in: the appendix "Reproduce on a GPU" (the command line).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .._files import atomic_write, check_output_path
from ..errors import InvalidInputError, OutputExistsError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..study.capture_report import Report

DPI = 110


FIGURE_BYTES = 4 * 2**20  # more than any report figure's PNG (under 1 MiB at DPI with six panels)


def check_plot_path(path: Path, force: bool = False, option: str = "--plot") -> None:
    """Refuse, before any work, a figure path that is not a ``.png`` file that can be written, or one that
    exists already (unless ``force``)."""
    if path.suffix.lower() != ".png":
        raise InvalidInputError(
            f"{option} {path} must end in .png (the figure is a PNG), e.g. {path.stem}.png."
        )
    if path.exists() and not path.is_dir() and not force:
        raise OutputExistsError(
            f"{option} {path} exists already. Pass --force to overwrite it, or choose another path."
        )
    check_output_path(path, path.name, option, needed=FIGURE_BYTES)


def report_figure(report: Report) -> Figure:
    """Left: ``m(gamma)`` and ``m - m_perm`` with their bootstrap bands, the Gaussian value and the solid
    threshold at this width. Right, one panel per depth of ``report.spectrum_depths``: the sink-free sample's
    eigenvalues (log scale) against their fitted MP law and spike cut (``spectra_plots.esd_against_mp``)."""
    from matplotlib.figure import Figure

    from . import plots, spectra_plots

    depths = report.spectrum_depths
    fig = Figure(figsize=(5.2 + 4.2 * len(depths), 3.9), layout="constrained")
    axes = fig.subplots(1, 1 + len(depths), squeeze=False)[0]
    p, e, ref = report.profile, report.excess, report.references
    curves = {"m(gamma)": (p.gamma, p.m)}
    bands = {"m(gamma)": (p.low, p.high)}
    if e is not None:
        curves["m - m_perm"] = (e.gamma, e.m)
        bands["m - m_perm"] = (e.low, e.high)
    ax = plots.depth_profiles(
        curves,
        "Omega",
        title=f"{report.label}: m(gamma), {round(100 * p.level)}% bands",
        ax=axes[0],
        reference=(ref["gaussian"], f"Gaussian vector ({ref['gaussian']:.3f})"),
        bands=bands,
    )
    ax.axhline(ref["solid_threshold"], color="crimson", ls="--", lw=1, label="solid threshold")
    ax.axhline(0.0, color="grey", lw=0.6)
    plots.legend(ax)
    cap = report.extra["capture"]
    for ax, layer in zip(axes[1:], depths):
        lam, fit = report.spectrum(layer)
        settled = "" if fit.settled else ", unsettled (a lower bound)"
        spectra_plots.esd_against_mp(lam, fit, label=f"l = {layer}", log=True, ax=ax)
        gamma = layer / cap.n_layers
        ax.set_title(f"gamma = {gamma:.2f}: {fit.n_spikes} spikes{settled}", fontsize="medium")
    return fig


def write_report_figure(report: Report, path: Path, replace: bool = True) -> Path:
    """Draw ``report_figure(report)`` and write it to ``path`` as a PNG, atomically; with ``replace=False`` never
    over a file that appeared meanwhile (``_files.atomic_write``)."""
    fig = report_figure(report)
    return atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=DPI), replace=replace)
