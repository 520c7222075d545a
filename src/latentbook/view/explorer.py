"""Per-layer views of a model, and the static explorer the published book embeds.

Usage:

1. ``views = ModelViews(name, capture, attention=attn_capture, classes=token_states)``: what the four
   metrics show at each depth ``l = 0..L``, computed once per depth and kept;
2. ``views.panel(metric, l)``: the plotly traces (plain dicts) of one metric at depth ``l``. Both front ends
   draw these: ``widgets.explore`` (live, with a kernel) and ``static_explorer`` (no kernel);
3. ``static_explorer({label: views, ...})``: one plotly figure with a model menu, a metric menu and a
   layer slider per model, every depth precomputed; ``explorer_html(fig)`` is the HTML for the book page,
   ``book_explorer(names)`` does all of it for the book's models and their random-weight twins.

The four metrics (``METRICS``):

- ``omega``: the distribution of object integrity ``Omega(h) = 1 - ||h||_1 / (sqrt(d) ||h||_2)`` over all
  captured tokens at depth ``l``, against the Gaussian reference: the distribution of Omega for i.i.d.
  ``N(0, I_d)`` vectors of the same ``d`` (mean ``~ 1 - sqrt(2/pi) = 0.2021``). PAPER.md, "Order parameter".
- ``spectrum``: the eigenvalues of the token covariance ``C^(l)`` (log10 scale) against the
  Marchenko–Pastur law fitted to their bulk (``spectra.mp_fit`` with the effective sample size), and the
  spikes beyond its edge. PAPER.md, "Spectral density", claim 3.
- ``attention``: the mean attention entropy ``H = -sum_j p_j log p_j`` of each head of layer ``l``, beside
  ``log(n_keys)``, the entropy of uniform attention. PAPER.md, "Attention thermodynamics".
- ``separability``: on the labelled ``binding`` set (``prompts.reasoning``), the cross-validated
  nearest-centroid accuracy of the value each token carries, per reasoning step, against depth, with the
  chance level and depth ``l`` marked (``classes.nearest_centroid_accuracy``). PAPER.md, claim 5.

Why a plotly figure for the static explorer, and not embedded ipywidgets state: widget state needs a kernel
for anything that computes (each layer would be a callback), while a plotly figure carries every depth's
data and switches between them in the browser with its own menus and sliders (``updatemenus``,
``sliders``), so the published page works with no kernel. plotly.js is not fetched from a CDN: the book
ships the copy from the ``plotly`` Python package (``tools/vendor_js.py`` -> ``_vendor/plotly``, served as
``_static/plotly/plotly.min.js``), and ``explorer_html`` loads it relative to the page's content root, so
the book works offline.
Introduced in: the explorer page of the book (``book/explorer.md``) and the labs.
"""

from __future__ import annotations

import hashlib
import html
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..capturing.accumulators import omega_of
from ..capturing.results import Capture
from ..errors import InvalidInputError

GAUSSIAN_OMEGA = 1.0 - math.sqrt(2.0 / math.pi)
CLASS_SET = "binding"  # the labelled reasoning set the separability metric uses


@dataclass(frozen=True)
class Metric:
    """One thing the explorers can show: its menu label and axis titles."""

    key: str
    label: str
    x_title: str
    y_title: str


METRICS: dict[str, Metric] = {
    m.key: m
    for m in (
        Metric("omega", "Omega distribution", "Omega (object integrity)", "density"),
        Metric(
            "spectrum",
            "Eigenvalue spectrum",
            "log10 eigenvalue of the covariance",
            "density (per log10 unit)",
        ),
        Metric("attention", "Attention entropy per head", "head", "mean attention entropy (nats)"),
        Metric("separability", "Class separability", "depth gamma = l / L", "nearest-centroid accuracy"),
    )
}

_COLORS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")


def _list(values) -> list[float]:
    """Plain floats with 4 significant digits (small JSON; NaN becomes None, which plotly leaves out)."""
    return [None if not math.isfinite(v) else float(f"{v:.4g}") for v in np.asarray(values, float).ravel()]


# --- omega ----------------------------------------------------------------------------------------------------


@lru_cache(maxsize=16)
def gaussian_omega_counts(d: int, bins: int, n: int = 8192, seed: int = 0) -> np.ndarray:
    """Histogram on ``bins`` equal bins of [0, 1] of Omega of ``n`` i.i.d. ``N(0, I_d)`` vectors (seeded)."""
    generator = torch.Generator().manual_seed(seed)
    omega = omega_of(torch.randn(n, d, generator=generator, dtype=torch.float64))
    return torch.histc(omega, bins=bins, min=0.0, max=1.0).numpy()


def omega_panel(cap: Capture, layer: int) -> list[dict]:
    """Omega histogram of every captured token at ``layer`` (density), the Gaussian reference, its mean.

    Shown on the bins of the capture's histogram that hold either distribution, two bins of margin.
    """
    edges, counts = cap.omega_histogram(layer)
    reference = gaussian_omega_counts(cap.d_model, len(counts))
    width = edges[1] - edges[0]
    used = np.flatnonzero((counts > 0) | (reference > 0))
    lo, hi = max(used[0] - 2, 0), min(used[-1] + 3, len(counts))
    centres = 0.5 * (edges[:-1] + edges[1:])[lo:hi]
    density = counts[lo:hi] / (counts.sum() * width)
    ref_density = reference[lo:hi] / (reference.sum() * width)
    return [
        dict(
            type="bar",
            name=f"tokens at this depth ({cap.n_tokens} tokens)",
            x=_list(centres),
            y=_list(density),
            marker=dict(color=_COLORS[0]),
            opacity=0.75,
        ),
        dict(
            type="scatter",
            mode="lines",
            name=f"Gaussian N(0, I_{cap.d_model})",
            x=_list(centres),
            y=_list(ref_density),
            line=dict(color=_COLORS[1], width=2),
        ),
        dict(
            type="scatter",
            mode="lines",
            name="1 - sqrt(2/pi) = 0.2021",
            x=[GAUSSIAN_OMEGA, GAUSSIAN_OMEGA],
            y=[0.0, _list([max(density.max(), ref_density.max())])[0]],
            line=dict(color=_COLORS[1], width=1, dash="dot"),
        ),
    ]


# --- spectrum -------------------------------------------------------------------------------------------------


def spectrum_panel(eigvals: np.ndarray, n_samples: float, bins: int = 60) -> list[dict]:
    """Histogram of ``log10`` eigenvalues, the fitted MP law in the same coordinates, and its spikes.

    The density of ``u = log10 lambda`` is ``rho(lambda) lambda ln 10``; the MP curve is scaled by the
    fraction of eigenvalues in its continuous bulk, ``(d - k) min(1, N/(d - k)) / d``, so both integrate to
    the share of the spectrum they describe. Eigenvalues below ``1e-9`` of the largest are drawn at that floor.
    If the bulk cannot be fitted (a degenerate spectrum), the MP curve and spikes are left empty.
    """
    from ..analysis import spectra

    lam = np.sort(np.asarray(eigvals, dtype=np.float64))[::-1]
    d = len(lam)
    floor = lam[0] * 1e-9
    u = np.log10(np.maximum(lam, floor))
    counts, edges = np.histogram(u, bins=bins)
    density = counts / (d * (edges[1] - edges[0]))
    mp_x: list[float] = []
    mp_y: list[float] = []
    spike_x: list[float] = []
    try:
        fit = spectra.mp_fit(lam, n_samples)
    except InvalidInputError:
        fit = None
    if fit is not None:
        lo, hi = fit.edges
        grid = np.linspace(max(lo, floor), hi, 200)
        share = (d - fit.n_spikes) * min(1.0, 1.0 / fit.ratio) / d
        rho = spectra.mp_density(grid, fit.ratio, fit.sigma2) / min(1.0, 1.0 / fit.ratio)
        mp_x, mp_y = _list(np.log10(grid)), _list(share * rho * grid * math.log(10))
        spike_x = _list(np.log10(fit.spikes))
    return [
        dict(
            type="bar",
            name="eigenvalues of C at this depth",
            x=_list(0.5 * (edges[:-1] + edges[1:])),
            y=_list(density),
            marker=dict(color=_COLORS[0]),
            opacity=0.75,
        ),
        dict(
            type="scatter",
            mode="lines",
            name="Marchenko–Pastur fit of the bulk",
            x=mp_x,
            y=mp_y,
            line=dict(color=_COLORS[1], width=2),
        ),
        dict(
            type="scatter",
            mode="markers",
            name="spikes beyond the MP edge",
            x=spike_x,
            y=[0.0] * len(spike_x),
            marker=dict(color=_COLORS[3], symbol="triangle-up", size=10),
        ),
    ]


# --- attention ------------------------------------------------------------------------------------------------


def attention_panel(attention, layer: int) -> list[dict]:
    """Mean entropy of each head of layer ``layer`` (depth ``l`` is the output of layer ``l``) and
    ``log(n_keys)`` (uniform attention). Depth 0, the embeddings, has no attention: empty traces."""
    heads: list[float] = []
    entropy: list[float] = []
    uniform: list[float] = []
    if layer > 0:
        values = attention.entropy()[layer - 1]
        heads = list(range(len(values)))
        entropy, uniform = _list(values), _list(attention.log_keys()[layer - 1])
    return [
        dict(type="bar", name="entropy of the head", x=heads, y=entropy, marker=dict(color=_COLORS[0])),
        dict(
            type="scatter",
            mode="markers",
            name="log(n_keys): uniform attention",
            x=heads,
            y=uniform,
            marker=dict(color=_COLORS[1], symbol="line-ew-open", size=18, line=dict(width=3)),
        ),
    ]


# --- class separability ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SeparabilityProfile:
    """Cross-validated nearest-centroid accuracy per reasoning step (rows) and depth (columns)."""

    accuracy: np.ndarray  # (n_steps, n_depths)
    chance: np.ndarray  # (n_steps,) most frequent class among the step's tokens
    step_names: tuple[str, ...]


def separability_profile(states, step_names: tuple[str, ...] | None = None) -> SeparabilityProfile:
    """``classes.nearest_centroid_accuracy`` of the tokens of each step, folds drawn by item.

    ``states`` is a ``capturing.states.TokenStates`` (states ``(n, L+1, d)``, labels, steps, items).
    Introduced in: chapter 6 (claim 5).
    """
    from ..analysis import classes

    steps = np.unique(states.steps)
    rows, chance = [], []
    for step in steps:
        pick = states.steps == step
        labels = states.labels[pick]
        n_folds = min(5, len(np.unique(states.items[pick])))
        rows.append(
            classes.nearest_centroid_accuracy(states.states[pick], labels, states.items[pick], n_folds)
        )
        chance.append(np.max(np.unique(labels, return_counts=True)[1]) / len(labels))
    names = tuple(step_names[s] if step_names else f"step {s}" for s in steps)
    return SeparabilityProfile(np.array(rows), np.array(chance), names)


def separability_panel(profile: SeparabilityProfile, gamma: np.ndarray, layer: int) -> list[dict]:
    """Accuracy against depth for each step, the chance level, and markers at depth ``layer``."""
    traces = [
        dict(
            type="scatter",
            mode="lines",
            name=name,
            x=_list(gamma),
            y=_list(row),
            line=dict(color=_COLORS[i % len(_COLORS)], width=2),
        )
        for i, (name, row) in enumerate(zip(profile.step_names, profile.accuracy))
    ]
    traces.append(
        dict(
            type="scatter",
            mode="lines",
            name="chance",
            x=[0.0, 1.0],
            y=[_list([profile.chance.max()])[0]] * 2,
            line=dict(color="#444444", width=1, dash="dot"),
        )
    )
    traces.append(
        dict(
            type="scatter",
            mode="markers",
            name="this depth",
            x=[_list([gamma[layer]])[0]] * len(profile.accuracy),
            y=_list(profile.accuracy[:, layer]),
            marker=dict(color="#222222", size=10, symbol="circle-open", line=dict(width=2)),
        )
    )
    return traces


# --- one model ------------------------------------------------------------------------------------------------


class ModelViews:
    """The panels of every metric at every depth of one model, computed on first use and kept.

    ``capture`` feeds ``omega`` and ``spectrum``; ``attention`` (a ``Capture`` made with ``attention=True``,
    or its ``AttentionStats``) feeds ``attention``; ``classes`` (``capturing.states.TokenStates`` of the
    ``binding`` set) feeds ``separability``. A metric whose source is missing says so in ``missing(metric)``.
    """

    def __init__(self, name: str, capture: Capture, attention=None, classes=None, step_names=None):
        if not isinstance(capture, Capture):
            raise InvalidInputError(
                f"ModelViews needs a latentbook Capture for {name!r}, got {type(capture).__name__}: "
                "pass lb.capture(...) or latentbook.capturing.cache.book_capture(name)."
            )
        if not capture.complete:
            raise InvalidInputError(
                f"The explorer shows every depth 0..{capture.n_layers}, and the capture of {name!r} holds depths "
                f"{capture.depths.tolist()} only (captured with depths=...): capture it with all depths."
            )
        self.name = name
        self.capture = capture
        self.attention = getattr(attention, "attention", attention)
        if attention is None and capture.attention is not None:
            self.attention = capture.attention
        if self.attention is not None and self.attention.n_layers != capture.n_layers:
            raise InvalidInputError(
                f"The attention statistics of {name!r} have {self.attention.n_layers} layers, the capture "
                f"{capture.n_layers}: pass captures of the same model."
            )
        self.classes = classes
        if classes is not None and classes.states.shape[1] != capture.n_depths:
            raise InvalidInputError(
                f"The class states of {name!r} have {classes.states.shape[1]} depths, the capture "
                f"{capture.n_depths}: pass token states of the same model."
            )
        self.step_names = step_names
        self._panels: dict[tuple[str, int], list[dict]] = {}
        self._eigvals: np.ndarray | None = None
        self._profile: SeparabilityProfile | None = None

    @property
    def n_layers(self) -> int:
        return self.capture.n_layers

    @property
    def gamma(self) -> np.ndarray:
        return self.capture.gamma

    def missing(self, metric: str) -> str | None:
        """Why ``metric`` cannot be shown for this model, or None when it can."""
        _metric(metric)
        if metric == "attention" and self.attention is None:
            return (
                f"No attention statistics for {self.name}: capture with attention=True "
                "(book_capture(name, attention=True))."
            )
        if metric == "separability" and self.classes is None:
            return f"No labelled token states for {self.name}: compute them with class_states(name)."
        return None

    def panel(self, metric: str, layer: int) -> list[dict]:
        """The traces of ``metric`` at depth ``layer`` (computed once, then served from memory)."""
        reason = self.missing(metric)
        if reason is not None:
            raise InvalidInputError(reason)
        if not isinstance(layer, (int, np.integer)) or not 0 <= layer <= self.n_layers:
            raise InvalidInputError(
                f"Depth {layer!r} is out of range for {self.name}: choose 0..{self.n_layers}."
            )
        key = (metric, int(layer))
        if key not in self._panels:
            self._panels[key] = self._compute(metric, int(layer))
        return self._panels[key]

    def _compute(self, metric: str, layer: int) -> list[dict]:
        if metric == "omega":
            return omega_panel(self.capture, layer)
        if metric == "spectrum":
            from ..analysis import spectra

            if self._eigvals is None:
                self._eigvals = self.capture.all_eigvals()
            n_eff = spectra.effective_sample_size(self.capture, layer).n_eff
            return spectrum_panel(self._eigvals[layer], n_eff)
        if metric == "attention":
            return attention_panel(self.attention, layer)
        if self._profile is None:
            self._profile = separability_profile(self.classes, self.step_names)
        return separability_panel(self._profile, self.gamma, layer)

    def metrics(self) -> list[str]:
        """The metrics this model can show."""
        return [m for m in METRICS if self.missing(m) is None]

    def precompute(self) -> None:
        """Compute every panel now, so that later changes of depth or metric only read memory."""
        for metric in self.metrics():
            for layer in range(self.n_layers + 1):
                self.panel(metric, layer)


def _metric(metric: str) -> Metric:
    if metric not in METRICS:
        raise InvalidInputError(f"Unknown metric {metric!r}: choose one of {list(METRICS)}.")
    return METRICS[metric]


def title(name: str, views: ModelViews, layer: int) -> str:
    return f"{name} · depth l = {layer} of {views.n_layers} · gamma = {views.gamma[layer]:.2f}"


# --- labelled token states, cached ----------------------------------------------------------------------------


def class_states_path(model_name: str) -> Path:
    """The file ``class_states(model_name)`` reads or writes (``.is_file()``: already computed)."""
    from ..capturing import cache
    from ..prompts import reasoning

    key = cache.cache_key(model_name, reasoning.load(CLASS_SET).texts(), {"token_states": CLASS_SET})
    return cache.capture_cache_dir() / f"{model_name.replace(':', '_').replace('/', '_')}-states-{key}.npz"


def class_states(model_name: str):
    """Token states of the ``binding`` set for ``model_name`` (``capturing.states.token_states``), cached.

    Kept beside the book's captures (``capture_cache_dir()``), keyed like them on the model, the texts and
    latentbook's source, so the explorers read them from disk after the first run.
    """
    from ..capturing.state_cache import load_token_states, save_token_states
    from ..capturing.states import token_states
    from ..prompts import reasoning

    path = class_states_path(model_name)
    if path.is_file():
        return load_token_states(path)
    result = token_states(model_name, reasoning.load(CLASS_SET))
    save_token_states(path, result)
    return result


def class_step_names() -> tuple[str, ...]:
    from ..prompts import reasoning

    return reasoning.load(CLASS_SET, n_items=8).steps


# --- the static explorer --------------------------------------------------------------------------------------


def _visibility(
    slots: dict[tuple[int, int], list[int]], n_traces: int, model: int, metric: int
) -> list[bool]:
    shown = set(slots.get((model, metric), []))
    return [i in shown for i in range(n_traces)]


def static_explorer(
    models: dict[str, ModelViews], metrics: list[str] | None = None, start: float = 0.5, height: int = 640
):
    """One plotly figure: a model menu, a metric menu and, per model, a slider over its depths ``0..L``.

    Every panel of every depth is embedded. The two menus act together: choosing a model rewrites the
    visibility each metric button will set, and choosing a metric rewrites that of each model button (plotly
    menus cannot read each other's state). A model's slider restyles all its traces, so switching metric
    keeps the depth. Each slider starts at the depth nearest ``gamma = start``.
    """
    import plotly.graph_objects as go

    if not models:
        raise InvalidInputError("static_explorer needs at least one model: {label: ModelViews}.")
    metrics = list(METRICS) if metrics is None else [_metric(m).key for m in metrics]
    for label, views in models.items():
        lacking = [m for m in metrics if views.missing(m)]
        if lacking:
            raise InvalidInputError(f"{label}: {views.missing(lacking[0])}")
    names = list(models)
    starts = {i: int(np.argmin(np.abs(models[n].gamma - start))) for i, n in enumerate(names)}
    data: list[dict] = []
    slots: dict[tuple[int, int], list[int]] = {}
    for i, name in enumerate(names):
        for j, metric in enumerate(metrics):
            for trace in models[name].panel(metric, starts[i]):
                slots.setdefault((i, j), []).append(len(data))
                data.append(dict(trace, visible=(i == 0 and j == 0)))
    n = len(data)

    def vis(i: int, j: int) -> list[bool]:
        return _visibility(slots, n, i, j)

    def model_title(i: int, layer: int) -> dict:
        return dict(text=title(names[i], models[names[i]], layer), x=0.01, xanchor="left", y=0.97)

    model_buttons = []
    for i in range(len(names)):
        relayout: dict[str, Any] = {"title": model_title(i, starts[i])}
        relayout.update({f"sliders[{k}].visible": k == i for k in range(len(names))})
        relayout.update(
            {f"updatemenus[1].buttons[{j}].args[0].visible": vis(i, j) for j in range(len(metrics))}
        )
        model_buttons.append(dict(label=names[i], method="update", args=[{"visible": vis(i, 0)}, relayout]))
    metric_buttons = []
    for j, metric in enumerate(metrics):
        info = METRICS[metric]
        relayout = {
            "xaxis.title.text": info.x_title,
            "yaxis.title.text": info.y_title,
            "xaxis.autorange": True,
            "yaxis.autorange": True,
        }
        relayout.update(
            {f"updatemenus[0].buttons[{i}].args[0].visible": vis(i, j) for i in range(len(names))}
        )
        metric_buttons.append(
            dict(label=info.label, method="update", args=[{"visible": vis(0, j)}, relayout])
        )

    sliders = []
    for i, name in enumerate(names):
        views = models[name]
        indices = [t for j in range(len(metrics)) for t in slots[(i, j)]]
        steps = []
        for layer in range(views.n_layers + 1):
            traces = [t for metric in metrics for t in views.panel(metric, layer)]
            steps.append(
                dict(
                    label=str(layer),
                    method="update",
                    args=[
                        {"x": [t["x"] for t in traces], "y": [t["y"] for t in traces]},
                        {
                            "title.text": model_title(i, layer)["text"],
                            f"updatemenus[0].buttons[{i}].args[1].title.text": model_title(i, layer)["text"],
                        },
                        indices,
                    ],
                )
            )
        sliders.append(
            dict(
                visible=i == 0,
                active=starts[i],
                steps=steps,
                currentvalue=dict(prefix="depth l = "),
                pad=dict(t=50),
                font=dict(size=10),
            )
        )
    first = METRICS[metrics[0]]
    layout = dict(
        title=model_title(0, starts[0]),
        height=height,
        margin=dict(t=190, b=110, l=70, r=20),
        template="plotly_white",
        barmode="overlay",
        bargap=0.05,
        legend=dict(orientation="h", x=0, xanchor="left", y=1.02, yanchor="bottom"),
        xaxis=dict(title=dict(text=first.x_title)),
        yaxis=dict(title=dict(text=first.y_title)),
        updatemenus=[
            dict(buttons=model_buttons, x=0.0, xanchor="left", y=1.38, yanchor="top", name="model"),
            dict(buttons=metric_buttons, x=0.45, xanchor="left", y=1.38, yanchor="top", name="metric"),
        ],
        annotations=[
            dict(text="model", x=0.0, y=1.43, xref="paper", yref="paper", showarrow=False, xanchor="left"),
            dict(text="metric", x=0.45, y=1.43, xref="paper", yref="paper", showarrow=False, xanchor="left"),
        ],
        sliders=sliders,
    )
    return go.Figure(data=data, layout=layout)


_LOADER = """<script>
(function () {
  var id = "%(id)s";
  function draw(Plotly) {
    var figure = JSON.parse(document.getElementById(id + "-data").textContent);
    Plotly.newPlot(id, figure.data, figure.layout, {responsive: true, displaylogo: false});
  }
  if (window.Plotly) { draw(window.Plotly); return; }
  // The book's own copy of plotly.js (_vendor/plotly -> _static/plotly), never one from the network. Sphinx writes the
  // relative path to the site root into <html data-content_root>, so this works on any page at any depth.
  var src = (document.documentElement.dataset.content_root || "") + "_static/plotly/plotly.min.js";
  if (typeof window.define === "function" && window.define.amd && typeof window.require === "function") {
    window.require([src], draw);  // with require.js on the page, plotly.js registers as an AMD module
    return;
  }
  var tag = document.querySelector("script[data-latentbook-plotly]");
  if (!tag) {
    tag = document.createElement("script");
    tag.src = src;
    tag.setAttribute("data-latentbook-plotly", "");
    document.head.appendChild(tag);
  }
  tag.addEventListener("load", function () { draw(window.Plotly); });
})();
</script>"""


def explorer_html(figure, element_id: str | None = None) -> str:
    """The figure as an HTML fragment: a div, its JSON, and a loader for the book's local plotly.js.

    The fragment never references a CDN (``include_plotlyjs=False`` in plotly's terms): plotly.js comes
    from ``_static/plotly/plotly.min.js``, loaded once per page whichever explorer asks first.
    """
    payload = figure.to_json()
    if element_id is None:
        element_id = "lb-explorer-" + hashlib.sha256(payload.encode()).hexdigest()[:12]
    height = figure.layout.height or 640
    safe = payload.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return (
        f'<div id="{html.escape(element_id)}" class="latentbook-explorer" style="width:100%;height:{height}px"></div>\n'
        f'<script type="application/json" id="{html.escape(element_id)}-data">{safe}</script>\n'
        + _LOADER
        % {"id": element_id}
    )


class ExplorerHTML:
    """Displays as the explorer's HTML fragment only (``text/html``), so myst-nb embeds exactly that."""

    def __init__(self, figure, element_id: str | None = None):
        self.figure = figure
        self.html = explorer_html(figure, element_id)

    def _repr_html_(self) -> str:
        return self.html


def book_views(name: str) -> ModelViews:
    """``ModelViews`` of one model from the book's cached captures and the cached ``binding`` token states."""
    from ..capturing.cache import book_capture

    return ModelViews(
        name,
        book_capture(name),
        attention=book_capture(name, attention=True),
        classes=class_states(name),
        step_names=class_step_names(),
    )


def book_explorer(names: list[str], with_null_twins: bool = True, labels: dict[str, str] | None = None):
    """The static explorer of the book's models (and each one's ``random:`` twin), ready to display.

    Every panel of every depth is computed here, at build time, from cached captures.
    """
    chosen = []
    for name in names:
        chosen.append(name)
        if with_null_twins:
            chosen.append(f"random:{name}")
    labels = labels or {}
    models = {}
    for name in chosen:
        views = book_views(name)
        views.precompute()
        models[labels.get(name, name)] = views
    return ExplorerHTML(static_explorer(models))
