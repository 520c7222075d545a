"""The book's figures: each draws what it is given, with labelled axes, and refuses empty input."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # tests only: no display; the book uses %matplotlib inline

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import latentbook as lb  # noqa: E402
from latentbook.analysis import synthetic, transition  # noqa: E402
from latentbook.view import plots  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _labelled(ax):
    assert ax.get_xlabel() and ax.get_ylabel()


def _legend(ax) -> list[str]:
    """The entries a reader sees in the legend, in order."""
    return [text.get_text() for text in ax.get_legend().get_texts()]


def _line(ax, label):
    """The line drawn under ``label`` in the legend (found by what it says, not by drawing order)."""
    (line,) = [line for line in ax.get_lines() if line.get_label() == label]
    return line


def _vertical_lines_at(ax):
    """The x of every vertical line drawn across the axes."""
    return [
        line.get_xdata()[0]
        for line in ax.get_lines()
        if len(set(np.asarray(line.get_xdata(), dtype=float))) == 1 and len(line.get_xdata()) == 2
    ]


def test_depth_profiles_one_line_per_model_nulls_in_shades_and_styles():
    gamma = np.linspace(0, 1, 7)
    ax = plots.depth_profiles(
        {
            "smollm2-135m": (gamma, gamma**2),
            "random:smollm2-135m": (gamma, gamma),
            "smollm2-135m (shuffled)": (gamma, gamma / 2),
        },
        "RMS",
        reference=(0.2, "ref"),
        logy=True,
    )
    _labelled(ax)
    assert _legend(ax) == ["smollm2-135m", "random:smollm2-135m", "smollm2-135m (shuffled)", "ref"]
    real, null, shuffled, ref = (
        _line(ax, name) for name in ("smollm2-135m", "random:smollm2-135m", "smollm2-135m (shuffled)", "ref")
    )
    np.testing.assert_allclose(real.get_ydata(), gamma**2)
    np.testing.assert_allclose(null.get_ydata(), gamma)
    np.testing.assert_allclose(shuffled.get_ydata(), gamma / 2)
    assert real.get_linestyle() == "-" and null.get_linestyle() == "--" and shuffled.get_linestyle() == ":"
    r, n, s = (np.array(line.get_color()) for line in (real, null, shuffled))
    assert np.all(n >= r) and np.all(s <= r) and not np.allclose(n, r)  # lighter twin, darker shuffled
    assert np.allclose(n - r, (1 - r) * 0.45) and np.allclose(s, r * 0.6)  # shades of one colour
    assert list(ref.get_ydata()) == [0.2, 0.2]  # a horizontal line at the reference
    assert ax.get_yscale() == "log"
    with pytest.raises(lb.InvalidInputError):
        plots.depth_profiles({}, "RMS")
    banded = plots.depth_profiles({"a": (gamma, gamma)}, "m", bands={"a": (gamma - 0.1, gamma + 0.1)})
    (band,) = banded.collections
    vertices = band.get_paths()[0].vertices
    assert vertices[:, 1].min() == pytest.approx(-0.1) and vertices[:, 1].max() == pytest.approx(1.1)


def test_embedded_models_keep_their_colour_in_every_figure():
    alone = plots.palette(["gemma3-270m"])["gemma3-270m"]
    together = plots.palette(["minilm-l6", "smollm2-135m", "gemma3-270m"])["gemma3-270m"]
    assert alone == together


def test_head_scatter_draws_every_head_and_the_mean():
    gamma = np.arange(1, 5) / 4
    values = np.arange(12.0).reshape(4, 3)
    ax = plots.head_scatter(gamma, values, "entropy (nats)", label="m")
    _labelled(ax)
    dots = np.asarray(ax.collections[0].get_offsets())  # every head a dot at its depth
    assert sorted(map(tuple, dots)) == sorted((g, v) for g, row in zip(gamma, values) for v in row)
    assert _legend(ax) == ["m (head mean)"]
    np.testing.assert_allclose(_line(ax, "m (head mean)").get_ydata(), values.mean(1))
    with pytest.raises(lb.InvalidInputError):
        plots.head_scatter(gamma, values[:3], "entropy", label="m")


def test_omega_violins_one_violin_per_model_and_depth():
    rng = np.random.default_rng(0)
    samples = {
        "a": {0.0: rng.uniform(0.2, 0.3, 200), 0.5: rng.uniform(0.3, 0.6, 200)},
        "random:a": {0.0: rng.uniform(0.2, 0.25, 200), 0.5: rng.uniform(0.2, 0.25, 200)},
    }
    ax = plots.omega_violins(samples)
    _labelled(ax)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.00", "0.50"]
    assert len([c for c in ax.collections if c.get_paths()]) >= 4  # one body per (model, depth)
    with pytest.raises(lb.InvalidInputError):
        plots.omega_violins({})


def test_coordinate_magnitudes_sorted_ratios_on_log_scale():
    values = np.ones(100)
    values[3] = 500.0
    ax = plots.coordinate_magnitudes({"m": values}, top=10)
    _labelled(ax)
    line = ax.get_lines()[0]
    assert line.get_ydata()[0] == pytest.approx(500.0) and len(line.get_ydata()) == 10
    assert ax.get_yscale() == "log"


def test_transition_fit_marks_gamma_c_only_when_there_is_one():
    curve = synthetic.order_parameter_curve(gamma_c=0.45, width=0.03, amplitude=0.3, n_layers=30, noise=0.005)
    fit = transition.critical_depth(curve.gamma, curve.m, n_boot=30)
    ax = plots.transition_fit(curve.gamma, curve.m, fit, label="planted")
    _labelled(ax)
    assert fit.has_transition
    assert _legend(ax) == ["planted: $m(\\gamma)$", "planted: jump fit"]
    dots = _line(ax, "planted: $m(\\gamma)$")
    np.testing.assert_array_equal(dots.get_xdata(), curve.gamma)
    np.testing.assert_array_equal(dots.get_ydata(), curve.m)
    fitted = _line(ax, "planted: jump fit")
    np.testing.assert_array_equal(fitted.get_xdata(), fit.fitted_gamma)
    np.testing.assert_array_equal(fitted.get_ydata(), fit.fitted)
    assert _vertical_lines_at(ax) == [pytest.approx(fit.gamma_c)]
    (span,) = ax.patches  # the interval of gamma_c, shaded
    xs = span.get_patch_transform().transform(span.get_path().vertices)[:, 0]  # in data units along gamma
    assert (xs.min(), xs.max()) == pytest.approx(fit.ci)
    flat_curve = synthetic.order_parameter_curve(amplitude=0.0, n_layers=30, noise=0.005)
    flat = transition.critical_depth(flat_curve.gamma, flat_curve.m, n_boot=30)
    assert not flat.has_transition
    ax = plots.transition_fit(flat_curve.gamma, flat_curve.m, flat, label="flat")
    assert _legend(ax) == ["flat: $m(\\gamma)$", "flat: jump fit"]
    assert _vertical_lines_at(ax) == [] and not ax.patches  # no gamma_c, no interval


def test_free_energy_curves_draws_each_curve():
    x = np.geomspace(0.25, 4, 11)
    gaps = np.vstack([np.log(x) ** 2, 3 * np.log(x) ** 2])
    ax = plots.free_energy_curves(x, gaps, r"$\beta'$", logx=True)
    _labelled(ax)
    curves = [line.get_ydata() for line in ax.get_lines() if np.array_equal(line.get_xdata(), x)]
    assert len(curves) == 2  # one per row of gaps, each over x
    np.testing.assert_allclose(curves[0], gaps[0])
    np.testing.assert_allclose(curves[1], gaps[1])
    zero = [line for line in ax.get_lines() if not np.array_equal(line.get_xdata(), x)]
    assert [list(line.get_ydata()) for line in zero] == [[0.0, 0.0]]  # the line F = F_min
    assert ax.get_xscale() == "log"
    with pytest.raises(lb.InvalidInputError):
        plots.free_energy_curves(x, np.ones((2, 3)), "x")


def test_legend_moves_outside_for_many_entries():
    gamma = np.linspace(0, 1, 5)
    few = plots.depth_profiles({"a": (gamma, gamma), "b": (gamma, gamma)}, "m")
    many = plots.depth_profiles({str(i): (gamma, gamma + i) for i in range(6)}, "m")
    for ax in (few, many):
        ax.figure.canvas.draw()
    inside = few.get_window_extent()
    box = few.get_legend().get_window_extent()
    assert inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0 and box.y1 <= inside.y1
    assert many.get_legend().get_window_extent().x0 >= many.get_window_extent().x1 - 1  # right of the axes
    assert _legend(many) == [str(i) for i in range(6)]  # every line named, none hidden
