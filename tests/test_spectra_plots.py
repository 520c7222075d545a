"""Spectrum figures: they draw what they are given, with labelled axes, and refuse what they cannot draw."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import latentbook as lb  # noqa: E402
from latentbook.analysis import bulk_fit, layer_spectra, synthetic  # noqa: E402
from latentbook.view import spectra_plots  # noqa: E402


@pytest.mark.parametrize("log", [False, True])
def test_esd_against_mp_draws_the_law_over_the_histogram(log):
    x = synthetic.gaussian(800, 200, seed=0)
    lam = layer_spectra.sample_eigvals(x)
    fit = bulk_fit.mp_fit(lam, 799)
    ax = spectra_plots.esd_against_mp(lam, fit, label="noise", log=log)
    assert ax.get_xlabel() and ax.get_ylabel()
    law = ax.get_lines()[0]
    x_law, y_law = law.get_xdata(), law.get_ydata()
    # the drawn law integrates to ~1 over its support (all eigenvalues are bulk here)
    assert np.trapezoid(y_law, x_law) == pytest.approx(1.0, abs=0.03)
    heights = np.array([p.get_height() for p in ax.patches])
    assert heights.max() == pytest.approx(y_law.max(), rel=0.35)
    plt.close("all")
    with pytest.raises(lb.InvalidInputError):
        spectra_plots.esd_against_mp(np.zeros(5), fit, label="empty")


def test_bbp_sweep_marks_threshold_and_edge():
    ax = spectra_plots.bbp_sweep(np.array([1.1, 2.0, 4.0]), np.array([1.5, 2.6, 4.3]), 1.0, 0.25)
    threshold = [line for line in ax.get_lines() if line.get_label() == "BBP threshold"][0]
    assert threshold.get_xdata()[0] == pytest.approx(1.5)
    assert "population" in ax.get_xlabel() and "sample" in ax.get_ylabel()
    plt.close("all")
    with pytest.raises(lb.InvalidInputError):
        spectra_plots.bbp_sweep(np.ones(3), np.ones(2), 1.0, 0.25)
