"""Chapter 5's figures: they draw what they are given, relative to the start or by depth, with labelled axes."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import latentbook as lb  # noqa: E402
from latentbook.figure_standard import check as figure_check  # noqa: E402
from latentbook.study.chapters.rg_flow_tables import DistanceProfile  # noqa: E402
from latentbook.view import rg_flow_figures  # noqa: E402


def test_planted_decay_draws_each_chain_over_its_start_against_q_to_the_2n():
    variances = {"clean": np.array([4.0, 2.56, 1.6384]), "noisy": np.array([2.0, 1.5, 1.25])}
    ax = rg_flow_figures.planted_decay(variances, 0.8)
    clean, noisy, theory = ax.get_lines()
    assert (clean.get_label(), noisy.get_label()) == ("clean", "noisy")
    np.testing.assert_allclose(clean.get_ydata(), [1.0, 0.64, 0.4096])
    np.testing.assert_allclose(noisy.get_ydata(), [1.0, 0.75, 0.625])
    assert clean.get_marker() != noisy.get_marker()
    np.testing.assert_allclose(theory.get_ydata(), 0.8 ** (2 * np.arange(3)))
    np.testing.assert_allclose(theory.get_ydata(), clean.get_ydata())  # the clean chain sits on the law
    assert ax.get_yscale() == "log" and "0.8" in ax.get_title() and ax.get_legend() is not None
    assert figure_check.problems(ax.figure) == []
    plt.close("all")
    with pytest.raises(lb.InvalidInputError):
        rg_flow_figures.planted_decay({}, 0.8)


def test_correlation_by_distance_shows_one_models_curves_by_depth_and_every_runs_length():
    gamma = np.linspace(0.0, 1.0, 7)
    correlation = np.array([0.9**d * np.ones(5) for d in range(7)]) ** np.arange(5)  # C(r) = 0.9^(d r)
    profiles = {
        "m-1": DistanceProfile(gamma, correlation, np.arange(1.0, 8.0)),
        "random:m-1": DistanceProfile(gamma, correlation, np.full(7, np.inf)),
    }
    fig = rg_flow_figures.correlation_by_distance(profiles, "m-1", title="by depth", every=3)
    curves, lengths = fig.axes
    shown = curves.get_lines()
    assert [line.get_label() for line in shown] == [f"$\\gamma$ = {g:.2f}" for g in gamma[::3]]
    np.testing.assert_allclose(shown[1].get_ydata(), correlation[3])
    assert shown[0].get_color() != shown[2].get_color()
    assert curves.get_title() == "by depth"
    by_label = {line.get_label(): line for line in lengths.get_lines()}
    np.testing.assert_allclose(by_label["m-1"].get_ydata(), np.arange(1.0, 8.0))
    np.testing.assert_allclose(by_label["random:m-1"].get_ydata(), 1e3)  # an infinite length at the cap
    assert lengths.get_yscale() == "log"
    assert figure_check.problems(fig) == []
    plt.close("all")
