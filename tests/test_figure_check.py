"""The book's figures read (figure_standard.check): the checker finds a legend over data, labels on top of each
other and text under 9 px in the content column, and every plotting function of the package, drawn on
synthetic data shaped like the book's (chapter 7's on the ladder's own records), has none of them."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # tests only: no display; the book uses %matplotlib inline

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from latentbook.analysis import bulk_fit, layer_spectra, synthetic, transition  # noqa: E402
from latentbook.figure_standard import check as figure_check  # noqa: E402
from latentbook.ladder import along_training  # noqa: E402
from latentbook.ladder import figures as ladder_figures  # noqa: E402
from latentbook.ladder import report as ladder_report  # noqa: E402
from latentbook.view import plots, spectra_plots  # noqa: E402

GAMMA = np.linspace(0.0, 1.0, 31)


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _crossing_lines(ax):
    ax.plot(GAMMA, GAMMA, label="rising")
    ax.plot(GAMMA, 1 - GAMMA, label="falling")


def test_the_checker_finds_a_legend_over_the_data():
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    _crossing_lines(ax)
    ax.legend(loc="center")  # where the lines cross
    found = figure_check.legend_overlaps(fig)
    assert len(found) == 1 and "rising" in found[0]
    with pytest.raises(figure_check.FigureStandardError, match="legend"):
        figure_check.require_readable(fig)


def test_the_checker_finds_a_legend_over_scatter_points_and_bars():
    fig, (dots, bars) = plt.subplots(1, 2, figsize=(7, 3.5))
    dots.scatter([0.5], [0.5], label="one point")
    dots.set(xlim=(0, 1), ylim=(0, 1))
    dots.legend(loc="center")
    bars.bar([0, 1, 2], [1.0, 1.0, 1.0], width=1.0, label="bars")
    bars.legend(loc="lower center")
    found = figure_check.legend_overlaps(fig)
    assert len(found) == 2 and "one point" in found[0] and "bars" in found[1]


def test_the_checker_passes_a_legend_in_a_free_corner_and_ignores_guides():
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    ax.plot(GAMMA, 0.1 + 0.1 * GAMMA, label="low")
    ax.axhline(0.9, color="grey", label="guide")  # across the axes, under the legend: not data
    ax.set_ylim(0, 1)
    ax.legend(loc="upper left")
    assert figure_check.problems(fig) == []


def test_the_checker_finds_a_text_box_over_data_and_labels_that_run_together():
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    _crossing_lines(ax)
    ax.text(0.5, 0.5, "crossing", ha="center", va="center")
    ax.text(0.5, 0.97, "holds", ha="center", va="top", transform=ax.transAxes)
    ax.text(0.5, 0.97, "holds", ha="center", va="top", transform=ax.transAxes)
    (over,) = figure_check.text_overlaps(fig)  # the label in the corner covers nothing
    assert over.startswith("text 'crossing' covers")
    assert any("'holds' and 'holds'" in problem for problem in figure_check.text_collisions(fig))


def test_the_checker_finds_text_under_9_px_once_the_page_shrinks_the_figure():
    """Text of s points renders at s * dpi / 72 * min(1, column / width) px: 10 pt at 100 dpi is 13.9 px in a
    figure narrower than the column, and 10 * 100 / 72 * 757 / 1600 = 6.6 px in a 16-inch one."""
    narrow, ax = plt.subplots(figsize=(6.5, 3.8))
    ax.plot(GAMMA, GAMMA)
    assert figure_check.small_text(narrow) == []
    assert figure_check.rendered_scale(narrow) == 1.0
    wide, ax = plt.subplots(figsize=(16, 3.8), layout="tight")  # the PNG is about 1600 px wide
    ax.plot(GAMMA, GAMMA)
    assert figure_check.rendered_scale(wide) == pytest.approx(757 / 1600, rel=0.06)
    small = figure_check.small_text(wide)
    assert small and all("px (under 9 px)" in problem for problem in small)
    tiny, ax = plt.subplots(figsize=(6.5, 3.8))
    ax.plot(GAMMA, GAMMA)
    ax.set_title("footnote", fontsize=5)  # 5 * 100 / 72 = 6.9 px
    assert [p.split(" renders")[0] for p in figure_check.small_text(tiny)] == ["text 'footnote'"]


def test_drawn_texts_are_what_the_figure_draws():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    ax.set(xlim=(0, 1), xticks=[0, 1], yticks=[], title="T", xlabel="x")
    assert sorted(t.get_text() for t in figure_check.drawn_texts(fig)) == ["0", "1", "T", "x"]


def test_the_legend_goes_to_a_free_corner_or_outside_the_axes():
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    ax.plot(GAMMA, GAMMA**2, label="rising")  # upper left is free
    assert plots.legend(ax)._loc == 2  # matplotlib's code for "upper left"
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    rng = np.random.default_rng(0)
    ax.scatter(rng.uniform(size=4000), rng.uniform(size=4000), s=2, label="everywhere")
    drawn = plots.legend(ax)  # no free place inside: to the right of the axes
    fig.canvas.draw()
    assert drawn.get_window_extent().x0 >= ax.get_window_extent().x1 - 1
    assert figure_check.legend_overlaps(fig) == []


def _profiles(n_models: int = 2) -> dict:
    """m(gamma)-like profiles of trained models (a rise at 0.45) and their flat random twins."""
    names = ["smollm2-135m", "gemma3-270m", "minilm-l6"][:n_models]
    out = {}
    for k, name in enumerate(names):
        out[name] = (GAMMA, 0.22 + (0.15 + 0.05 * k) / (1 + np.exp(-(GAMMA - 0.45) / 0.05)))
        out[f"random:{name}"] = (GAMMA, np.full_like(GAMMA, 0.2) + 0.005 * k)
    return out


FIGURES = {
    "depth_profiles": lambda: plots.depth_profiles(
        _profiles(2), "mean Omega", reference=(plots.GAUSSIAN_OMEGA, "Gaussian")
    ),
    "depth_profiles, one model with bands": lambda: plots.depth_profiles(
        {"smollm2-135m": (GAMMA, GAMMA)},
        "m",
        bands={"smollm2-135m": (GAMMA - 0.1, GAMMA + 0.1)},
    ),
    "depth_profiles, log": lambda: plots.depth_profiles(
        {k: (g, np.exp(5 * v)) for k, (g, v) in _profiles(1).items()}, "RMS", logy=True
    ),
    "head_scatter": lambda: plots.head_scatter(
        GAMMA,
        np.random.default_rng(0).uniform(0, 1, (31, 9)) * (1 - GAMMA[:, None]),
        "entropy (nats)",
        label="smollm2-135m",
    ),
    "omega_violins": lambda: plots.omega_violins(
        {
            name: {
                g: np.random.default_rng(k).normal(0.2 + 0.2 * g * (k == 0), 0.03, 300)
                for g in (0.1, 0.5, 0.9)
            }
            for k, name in enumerate(["smollm2-135m", "random:smollm2-135m"])
        }
    ),
    "coordinate_magnitudes": lambda: plots.coordinate_magnitudes(
        {
            "smollm2-135m": np.r_[np.full(3, 300.0), np.ones(500)],
            "random:smollm2-135m": np.linspace(1.5, 1.0, 503),
        }
    ),
    "free_energy_curves": lambda: plots.free_energy_curves(
        np.geomspace(0.25, 4, 11), np.vstack([np.log(np.geomspace(0.25, 4, 11)) ** 2] * 3), "x", logx=True
    ),
    "verdict_heatmap": lambda: plots.verdict_heatmap(
        pd.DataFrame(
            {
                f"run {k}": ["holds", "does not hold", "uninformative", "inconclusive", "not yet run"]
                for k in range(12)
            },
            index=["omega_jump", "stays_liquid", "sparse_codes", "spikes_grow", "landmarks"],
        )
    ),
}


def _transition_figure():
    curve = synthetic.order_parameter_curve(gamma_c=0.45, width=0.03, amplitude=0.3, n_layers=30, noise=0.005)
    fit = transition.critical_depth(curve.gamma, curve.m, n_boot=30)
    return plots.transition_fit(curve.gamma, curve.m, fit, label="smollm2-135m")


def _esd(log: bool):
    x = synthetic.gaussian(800, 200, seed=0)
    x[:, 0] *= 6.0  # one spike past the bulk
    lam = layer_spectra.sample_eigvals(x)
    return spectra_plots.esd_against_mp(lam, bulk_fit.mp_fit(lam, 799), label="l = 12", log=log)


FIGURES |= {
    "transition_fit": _transition_figure,
    "esd_against_mp": lambda: _esd(False),
    "esd_against_mp, log": lambda: _esd(True),
    "bbp_sweep": lambda: spectra_plots.bbp_sweep(
        np.linspace(1.0, 4.0, 9), np.r_[np.full(4, 2.25), np.linspace(2.7, 4.4, 5)], 1.0, 0.25
    ),
}


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_every_plotting_function_draws_a_figure_that_reads(name):
    drawn = FIGURES[name]()
    fig = drawn if isinstance(drawn, plt.Figure) else drawn.figure
    assert figure_check.problems(fig) == []


def test_the_landmark_row_reads_in_the_books_three_row_layout():
    from latentbook.study import run_landmarks
    from latentbook.view.landmark_plots import plot_landmark_row
    from tests.test_study_landmarks import planted_capture

    cap, _, _ = planted_capture()
    result = run_landmarks.depth_landmarks(cap, "smollm2-135m", n_boot=30)
    fig, axes = plt.subplots(3, 1, figsize=(7.2, 8.4), sharex=True)
    plot_landmark_row({"smollm2-135m": result}, axes, "smollm2-135m")
    fig.tight_layout()
    assert figure_check.problems(fig) == []


@pytest.fixture(scope="module")
def ladder():
    """Chapter 7's records: the ladder's measurements, the first seed of each architecture, its training logs."""
    from latentbook.ladder import report, store

    m = report.load_measurements(store.REPO_LADDER_V2 / report.MEASUREMENTS)
    first = [name for name in m["rungs"] if name.endswith("-s0")]
    return m, first, {name: store.training_log(name) for name in first}


LADDER_FIGURES = {  # as chapter 7 draws them
    "training_curves": lambda m, first, logs: ladder_figures.training_curves(logs),
    "accuracy_by_hops": lambda m, first, logs: ladder_figures.accuracy_by_hops(
        ladder_report.select(m, first)
    ),
    "capability_by_architecture": lambda m, first, logs: ladder_figures.capability_by_architecture(m),
    "omega_profiles": lambda m, first, logs: ladder_figures.omega_profiles(ladder_report.select(m, first)),
    "tco_decoding": lambda m, first, logs: ladder_figures.tco_decoding(m, first),
    "capability_scatter": lambda m, first, logs: ladder_figures.capability_scatter(m),
    "along_training": lambda m, first, logs: ladder_figures.along_training(
        along_training.training_table(m), along_training.training_correlations(m, n_boot=200)
    ),
}


@pytest.mark.parametrize("name", sorted(LADDER_FIGURES))
def test_chapter_7s_figures_read_on_the_ladders_records(ladder, name):
    assert figure_check.problems(LADDER_FIGURES[name](*ladder)) == []
