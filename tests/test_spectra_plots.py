"""Spectrum figures: they draw what they are given, with labelled axes, and refuse what they cannot draw."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

import latentbook as lb  # noqa: E402
from latentbook.analysis import bulk_fit, layer_spectra, synthetic  # noqa: E402
from latentbook.figure_standard import check as figure_check  # noqa: E402
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


def _noise_fit(seed: int) -> tuple[np.ndarray, bulk_fit.MPFit]:
    lam = layer_spectra.sample_eigvals(synthetic.gaussian(400, 100, seed=seed))
    return lam, bulk_fit.mp_fit(lam, 399)


def test_esd_grid_draws_one_titled_panel_per_spectrum_and_one_legend_below():
    panels = {f"run {i}": _noise_fit(i) for i in range(3)}
    colours = [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)]
    fig = spectra_plots.esd_grid(panels, ncols=2, colors=colours)
    assert [ax.get_title() for ax in fig.axes] == list(panels)  # the empty fourth cell is gone
    for ax, colour, (_, fit) in zip(fig.axes, colours, panels.values()):
        assert ax.get_legend() is None
        assert ax.patches[0].get_facecolor()[:3] == pytest.approx(colour)
        cut = [line for line in ax.get_lines() if line.get_label() == "spike cut"][0]
        assert cut.get_xdata()[0] == pytest.approx(np.log10(fit.threshold))  # each panel its own fit
    (below,) = fig.legends
    assert [t.get_text() for t in below.get_texts()] == ["eigenvalues", "fitted MP law", "spike cut"]
    assert figure_check.problems(fig) == []
    plt.close("all")
    with pytest.raises(lb.InvalidInputError):
        spectra_plots.esd_grid(panels, colors=colours[:2])


def _profile(gamma, **columns) -> pd.DataFrame:
    return pd.DataFrame({"gamma": gamma, **columns})


def test_sink_against_sample_pairs_each_models_all_tokens_and_sample_lines():
    gamma = np.array([0.0, 0.5, 1.0])
    all_tokens = {
        "a-1": _profile(gamma, participation_ratio=[1.0, 1.2, 1.1]),
        "b-1": _profile(gamma, participation_ratio=[30.0, 20.0, 10.0]),
    }
    sample = {
        "a-1": _profile(gamma, participation_ratio=[50.0, 60.0, 70.0]),
        "b-1": _profile(gamma, participation_ratio=[40.0, 30.0, 20.0]),
    }
    ax = spectra_plots.sink_against_sample(all_tokens, sample, title="sink")
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines) == [
        "a-1, all tokens",
        "a-1, sample without position 0",
        "b-1, all tokens",
        "b-1, sample without position 0",
    ]
    assert lines["a-1, all tokens"].get_ydata().tolist() == [1.0, 1.2, 1.1]
    assert lines["b-1, sample without position 0"].get_ydata().tolist() == [40.0, 30.0, 20.0]
    assert lines["a-1, all tokens"].get_linestyle() == "-"
    assert lines["a-1, sample without position 0"].get_linestyle() == "--"
    assert lines["a-1, all tokens"].get_color() == lines["a-1, sample without position 0"].get_color()
    assert lines["a-1, all tokens"].get_color() != lines["b-1, all tokens"].get_color()
    assert ax.get_yscale() == "log" and ax.get_title() == "sink"
    assert figure_check.problems(ax.figure) == []
    plt.close("all")


def _spectrum_profile(gamma, scale) -> pd.DataFrame:
    return _profile(
        gamma,
        n_spikes=[3, 5, 7],
        effective_rank=scale * np.array([10.0, 20.0, 30.0]),
        participation_ratio=scale * np.array([4.0, 8.0, 2.0]),
        top_coordinate=[1.0, 100.0, 3.0],
        mean_share=[0.1, 0.5, 0.9],
        pr_uncentred=scale * np.array([2.0, 2.0, 0.2]),
    )


def test_spread_against_depth_divides_by_each_models_noise_and_marks_gamma_c():
    gamma = np.array([0.0, 0.5, 1.0])
    profiles = {"m-1": _spectrum_profile(gamma, 1.0), "random:m-1": _spectrum_profile(gamma, 2.0)}
    noise = {
        "m-1": pd.DataFrame({"effective_rank": [9.0, 11.0], "participation_ratio": [4.0, 4.0]}),
        "random:m-1": pd.DataFrame({"effective_rank": [40.0, 40.0], "participation_ratio": [1.0, 3.0]}),
    }
    fig = spectra_plots.spread_against_depth(profiles, noise, gamma_c=0.42)
    spikes, erank, pr, top = fig.axes

    def ydata(ax, label):
        return [line for line in ax.get_lines() if line.get_label() == label][0].get_ydata()

    assert ydata(spikes, "m-1").tolist() == [3, 5, 7]
    np.testing.assert_allclose(ydata(erank, "m-1"), [1.0, 2.0, 3.0])  # over the noise mean, 10
    np.testing.assert_allclose(ydata(erank, "random:m-1"), [0.5, 1.0, 1.5])
    np.testing.assert_allclose(ydata(pr, "random:m-1"), [4.0, 8.0, 2.0])  # over 2
    assert ydata(top, "m-1").tolist() == [1.0, 100.0, 3.0] and top.get_yscale() == "log"
    for ax in fig.axes:
        assert any(line.get_xdata()[0] == 0.42 and line.get_linestyle() == "-." for line in ax.get_lines())
    assert [ax.get_legend() is not None for ax in fig.axes] == [True, False, False, False]
    assert "0.42" in spikes.get_title()
    assert figure_check.problems(fig) == []
    plt.close("all")


def test_mean_direction_against_depth_shows_the_share_and_the_uncentred_pr_ratio():
    gamma = np.array([0.0, 0.5, 1.0])
    fig = spectra_plots.mean_direction_against_depth({"m-1": _spectrum_profile(gamma, 1.0)})
    share, ratio = fig.axes
    assert share.get_lines()[0].get_ydata().tolist() == [0.1, 0.5, 0.9]
    np.testing.assert_allclose(ratio.get_lines()[0].get_ydata(), [0.5, 0.25, 0.1])
    assert ratio.get_yscale() == "log" and share.get_yscale() == "linear"
    assert figure_check.problems(fig) == []
    plt.close("all")
