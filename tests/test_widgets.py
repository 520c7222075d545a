"""The explorers: per-layer panels checked against known answers, the static figure's controls, and the
ipywidgets explorer driven headlessly (layer, metric, model, capture with progress, cancel)."""

import json
import re

import numpy as np
import pytest

import latentbook as lb
from latentbook.analysis import bulk_fit, classes, synthetic
from latentbook.capturing.cache import book_capture_path
from latentbook.errors import InvalidInputError
from latentbook.view import explorer as ex
from latentbook.view import explorer_panels as panels
from latentbook.view import static_explorer as st

PROMPTS = lb.prompts.load("general", limit=12)


@pytest.fixture(scope="module")
def tiny_capture(tiny):
    return lb.capture(tiny, PROMPTS, max_length=128, batch_size=6, attention=True, progress=False)


@pytest.fixture(scope="module")
def tiny_views(tiny_capture):
    states = synthetic.class_trajectories(n_items=40, n_steps=2, n_depths=3, d=64, k=4, separation=[0, 3, 8])
    return ex.ModelViews("tiny", tiny_capture, classes=states, step_names=("first", "second"))


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LATENTBOOK_CAPTURE_CACHE", str(tmp_path))
    return tmp_path


# --- panels -------------------------------------------------------------------------------------------------


def test_omega_panel_is_a_density_beside_the_gaussian_reference(tiny_capture):
    bars, gaussian, mean_line = panels.omega_panel(tiny_capture, 1)
    x, y, ref = np.array(bars["x"]), np.array(bars["y"]), np.array(gaussian["y"])
    width = x[1] - x[0]
    assert width == pytest.approx(1 / 200, rel=1e-3)
    assert np.sum(y) * width == pytest.approx(1.0, abs=0.01)
    assert np.sum(ref) * width == pytest.approx(1.0, abs=0.01)
    assert np.sum(x * y) * width == pytest.approx(tiny_capture.omega_mean()[1], abs=width)
    # the Gaussian reference of d = 64: centred near 1 - sqrt(2/pi), within a bin or two
    assert np.sum(x * ref) * width == pytest.approx(panels.GAUSSIAN_OMEGA, abs=0.01)
    assert mean_line["x"] == [panels.GAUSSIAN_OMEGA] * 2


def test_gaussian_reference_concentrates_with_d():
    edges = np.linspace(0, 1, 201)
    centres = 0.5 * (edges[1:] + edges[:-1])
    spreads = []
    for d in (64, 1024):
        counts = panels.gaussian_omega_counts(d, 200)
        p = counts / counts.sum()
        mean = np.sum(p * centres)
        assert mean == pytest.approx(panels.GAUSSIAN_OMEGA, abs=0.006)
        spreads.append(np.sqrt(np.sum(p * (centres - mean) ** 2)))
    assert spreads[1] < spreads[0] / 2  # sd ~ 1/sqrt(d)


def test_spectrum_panel_of_gaussian_data_matches_mp_and_finds_planted_spikes():
    n, d = 4000, 200
    lam = np.linalg.eigvalsh(np.cov(synthetic.gaussian(n, d, seed=1), rowvar=False))
    bars, mp, spikes = panels.spectrum_panel(lam, n)
    assert spikes["x"] == []
    # the MP curve integrates to the whole spectrum and lies over the histogram
    u, f = np.array(mp["x"]), np.array(mp["y"])
    assert np.trapezoid(f, u) == pytest.approx(1.0, abs=0.03)
    bx, by = np.array(bars["x"]), np.array(bars["y"])
    assert np.sum(by) * (bx[-1] - bx[0]) / (len(bx) - 1) == pytest.approx(1.0, abs=1e-3)
    assert np.max(np.abs(np.interp(bx, u, f) - by)[by > 0.5]) < 0.6 * by.max()
    planted = synthetic.spiked_covariance(n, d, spikes=[30.0, 20.0, 10.0], seed=2)
    lam = np.linalg.eigvalsh(np.cov(planted.x, rowvar=False))
    _, _, spikes = panels.spectrum_panel(lam, n)
    fit = bulk_fit.mp_fit(lam, n)
    assert len(spikes["x"]) == fit.n_spikes == 3
    assert sorted(spikes["x"]) == pytest.approx(sorted(np.log10(fit.spikes)), abs=1e-3)


def test_attention_panel_shows_each_head_of_the_layer(tiny_capture):
    heads, uniform = panels.attention_panel(tiny_capture.attention, 2)
    assert heads["y"] == pytest.approx(tiny_capture.attention.entropy()[1], rel=1e-3)
    assert uniform["y"] == pytest.approx(tiny_capture.attention.log_keys()[1], rel=1e-3)
    assert all(h <= u + 1e-6 for h, u in zip(heads["y"], uniform["y"]))  # entropy <= log n_keys
    assert panels.attention_panel(tiny_capture.attention, 0)[0]["x"] == []  # no attention before layer 1


def test_separability_panel_draws_each_step_chance_and_the_depth():
    states = synthetic.class_trajectories(n_items=60, n_steps=2, n_depths=3, d=32, k=3, separation=[0, 2, 10])
    profile = classes.separability_profile(states)
    traces = panels.separability_panel(profile, np.array([0, 0.5, 1.0]), 1)
    assert [t["name"] for t in traces] == ["step 0", "step 1", "chance", "this depth"]
    assert traces[-1]["x"] == [0.5, 0.5]
    assert traces[-1]["y"] == pytest.approx(profile.accuracy[:, 1], abs=1e-3)
    assert traces[2]["y"] == pytest.approx([profile.chance.max()] * 2, abs=1e-3)


def test_model_views_cache_panels_and_explain_missing_sources(tiny_capture, tiny_views):
    assert tiny_views.panel("omega", 1) is tiny_views.panel("omega", 1)
    plain = ex.ModelViews("plain", tiny_capture)
    plain.attention = None
    assert "attention=True" in plain.missing("attention")
    assert "book_binding_states" in plain.missing("separability")
    with pytest.raises(InvalidInputError, match="attention=True"):
        plain.panel("attention", 1)
    with pytest.raises(InvalidInputError, match="0..2"):
        tiny_views.panel("omega", 3)
    with pytest.raises(InvalidInputError, match="Unknown metric"):
        tiny_views.panel("entropy", 1)
    with pytest.raises(InvalidInputError, match="Capture"):
        ex.ModelViews("bad", np.zeros(3))


# --- the static explorer --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def other_views(tiny):
    """The same model on 12 other prompts: panels that differ from ``tiny_views``'s, so a reader (and this
    test) can tell which model a figure shows."""
    cap = lb.capture(
        tiny,
        lb.prompts.load("general", limit=24)[12:],
        max_length=128,
        batch_size=6,
        attention=True,
        progress=False,
    )
    states = synthetic.class_trajectories(n_items=40, n_steps=2, n_depths=3, d=64, k=4, separation=[1, 5, 2])
    return ex.ModelViews("other", cap, classes=states, step_names=("first", "second"))


@pytest.fixture(scope="module")
def static(tiny_views, other_views):
    return st.static_explorer({"tiny": tiny_views, "tiny again": other_views})


def _apply_update(figure: dict, args: list) -> None:
    """What plotly.js does for method "update": restyle (per trace) then relayout (nested paths)."""
    restyle, relayout = args[0], args[1]
    indices = args[2] if len(args) > 2 else list(range(len(figure["data"])))
    for key, values in restyle.items():
        for k, index in enumerate(indices):
            figure["data"][index][key] = values[k] if isinstance(values, list) else values
    for path, value in relayout.items():
        target, parts = figure["layout"], re.findall(r"[^.\[\]]+", path)
        for part in parts[:-1]:
            target = target[int(part)] if part.isdigit() else target.setdefault(part, {})
        target[int(parts[-1]) if parts[-1].isdigit() else parts[-1]] = value


def _shown(figure: dict) -> list[tuple]:
    """What the reader sees: each visible trace's name and data."""
    return [(t["name"], list(t["x"]), list(t["y"])) for t in figure["data"] if t.get("visible")]


def _drawn(views, metric: str, layer: int) -> list[tuple]:
    """The traces ``views`` draws for ``metric`` at ``layer``, as ``_shown`` reads them."""
    return [(t["name"], list(t["x"]), list(t["y"])) for t in views.panel(metric, layer)]


def test_static_explorer_menus_and_sliders_select_model_metric_and_depth(static, tiny_views, other_views):
    figure = json.loads(static.to_json())
    layout = figure["layout"]
    assert [b["label"] for b in layout["updatemenus"][0]["buttons"]] == ["tiny", "tiny again"]
    assert [b["label"] for b in layout["updatemenus"][1]["buttons"]] == [
        m.label for m in panels.METRICS.values()
    ]
    assert [len(s["steps"]) for s in layout["sliders"]] == [3, 3]
    assert [s["visible"] for s in layout["sliders"]] == [True, False]
    # first model, first metric, at the depth nearest gamma = 1/2 (l = 1 of 2)
    assert _shown(figure) == _drawn(tiny_views, "omega", 1) != _drawn(other_views, "omega", 1)
    assert layout["title"]["text"].startswith("tiny · depth l = 1 of 2")

    def click(menu: int, label: str) -> None:
        button = next(b for b in figure["layout"]["updatemenus"][menu]["buttons"] if b["label"] == label)
        _apply_update(figure, button["args"])

    click(1, "Eigenvalue spectrum")
    assert _shown(figure) == _drawn(tiny_views, "spectrum", 1)
    assert figure["layout"]["xaxis"]["title"]["text"] == panels.METRICS["spectrum"].x_title
    click(0, "tiny again")  # the metric stays: the model button was rewritten by the metric button
    assert _shown(figure) == _drawn(other_views, "spectrum", 1)
    assert figure["layout"]["title"]["text"].startswith("tiny again · depth l = 1 of 2")
    assert [s["visible"] for s in figure["layout"]["sliders"]] == [False, True]
    click(1, "Omega distribution")  # the metric button was rewritten by the model button
    assert _shown(figure) == _drawn(other_views, "omega", 1)
    # the visible slider moves its model's panels to that depth, and leaves the other model's alone
    _apply_update(figure, figure["layout"]["sliders"][1]["steps"][2]["args"])
    assert _shown(figure) == _drawn(other_views, "omega", 2) != _drawn(other_views, "omega", 1)
    assert figure["layout"]["title"]["text"].startswith("tiny again · depth l = 2 of 2")
    click(0, "tiny")
    assert _shown(figure) == _drawn(tiny_views, "omega", 1)
    # ... and rewrites what its model button will show on return
    assert figure["layout"]["updatemenus"][0]["buttons"][1]["args"][1]["title"]["text"].startswith(
        "tiny again · depth l = 2"
    )


def test_static_explorer_refuses_models_without_every_metric(tiny_capture):
    plain = ex.ModelViews("plain", tiny_capture)
    with pytest.raises(InvalidInputError, match="book_binding_states"):
        st.static_explorer({"plain": plain})
    assert st.static_explorer({"plain": plain}, metrics=["omega", "spectrum"]).layout.sliders[0].steps


def test_explorer_html_uses_the_books_plotly_and_no_cdn(static):
    fragment = st.explorer_html(static, "lb-test")
    assert "https://" not in fragment and "http://" not in fragment and "cdn" not in fragment.lower()
    assert "_static/plotly/plotly.min.js" in fragment
    assert 'id="lb-test"' in fragment and 'class="latentbook-explorer"' in fragment
    payload = re.search(r'<script type="application/json" id="lb-test-data">(.*?)</script>', fragment, re.S)
    assert "<" not in payload.group(1)  # a title like "</script>" could not end the block early
    assert json.loads(payload.group(1))["layout"]["updatemenus"][0]["buttons"][0]["label"] == "tiny"
    assert st.ExplorerHTML(static, "lb-test")._repr_html_() == fragment


# --- the ipywidgets explorer ----------------------------------------------------------------------------------


def _ys(explorer) -> list:
    return [list(t.y) if t.y is not None else [] for t in explorer.figure.data]


def test_widget_answers_layer_and_metric_changes_from_memory(tiny_views):
    explorer = lb.widgets.explore(captures={"tiny": tiny_views}, metric="omega")
    assert explorer.layer.max == 2 and explorer.figure.layout.title.text.startswith("tiny · depth l = 0")
    assert [t.name for t in explorer.figure.data] == [t["name"] for t in tiny_views.panel("omega", 0)]
    for metric in panels.METRICS:
        explorer.metric.value = metric
        assert len(explorer.figure.data) == len(tiny_views.panel(metric, explorer.layer.value))
        assert explorer.figure.layout.xaxis.title.text == panels.METRICS[metric].x_title
        changes = 0
        for layer in (1, 2, 0):
            before = _ys(explorer)
            explorer.layer.value = layer
            assert explorer.figure.layout.title.text.startswith(f"tiny · depth l = {layer}")
            assert _ys(explorer) == [t["y"] for t in tiny_views.panel(metric, layer)]
            changes += _ys(explorer) != before
        assert changes >= 2  # (random weights: two depths can have the same uniform attention)
    assert "gamma = l / L = 0.000" in explorer.gamma.value


def test_widget_explains_a_metric_its_capture_lacks(tiny_capture):
    plain = ex.ModelViews("plain", tiny_capture)
    plain.attention = None
    explorer = lb.widgets.explore(captures={"plain": plain}, metric="attention")
    assert len(explorer.figure.data) == 0
    assert "attention=True" in explorer.figure.layout.title.text
    assert explorer.capture_button.disabled  # a given capture is not the book's to fill
    explorer.metric.value = "omega"
    assert len(explorer.figure.data) == 3
    with pytest.raises(InvalidInputError, match="Unknown metric"):
        lb.widgets.explore(captures={"plain": plain}, metric="gamma")


@pytest.mark.slow
def test_widget_captures_a_model_not_yet_saved_with_progress(cache):
    explorer = lb.widgets.explore(["random:llama-tiny"], n_prompts=6)
    assert explorer.missing_sources("random:llama-tiny") == ["residual", "attention", "classes"]
    assert "press Capture" in explorer.status.value and len(explorer.figure.data) == 0
    assert not explorer.capture_button.disabled
    seen = []
    explorer.progress.observe(lambda change: seen.append(change["new"]), "value")
    thread = explorer.start_capture()
    assert explorer.capture_button.disabled and not explorer.cancel_button.disabled
    thread.join(timeout=600)
    assert explorer.status.value == "Captured random:llama-tiny."
    assert explorer.missing_sources("random:llama-tiny") == []
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) >= 3
    assert [t.type for t in explorer.figure.data] == ["bar", "scatter", "scatter"]
    explorer.layer.value = 2
    assert explorer.figure.layout.title.text.startswith("random:llama-tiny · depth l = 2")
    explorer.metric.value = "separability"
    assert [t.name for t in explorer.figure.data][-2:] == ["chance", "this depth"]
    assert explorer.capture_button.disabled and explorer.cancel_button.disabled


@pytest.mark.slow
def test_widget_cancel_stops_between_batches_and_saves_nothing(cache):
    explorer = lb.widgets.explore(["random:llama-tiny"], n_prompts=48)  # 3 batches of 16
    explorer.progress.observe(lambda change: explorer.cancel() if change["new"] > 0 else None, "value")
    explorer.start_capture().join(timeout=600)
    assert explorer.status.value.startswith("Cancelled")
    assert 0 < explorer.progress.value < 1 / 3  # stopped after the first batch of the first capture
    assert not book_capture_path("random:llama-tiny", n_prompts=48).exists()
    assert explorer.missing_sources("random:llama-tiny") == ["residual", "attention", "classes"]
    assert not explorer.capture_button.disabled and explorer.cancel_button.disabled
