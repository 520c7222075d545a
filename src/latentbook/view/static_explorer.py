"""The static explorer of the published book: one plotly figure that needs no kernel, and its HTML.

Usage: ``fig = static_explorer({label: views, ...})`` with ``view.explorer.ModelViews`` of each model (a model
menu, a metric menu and a layer slider per model, every depth precomputed), then ``ExplorerHTML(fig)`` (or
``explorer_html(fig)``) for the book page; ``view.explorer.book_explorer(names)`` does all of it for the book's
models and their random-weight twins.

Why a plotly figure, and not embedded ipywidgets state: widget state needs a kernel for anything that computes
(each layer would be a callback), while a plotly figure carries every depth's data and switches between them in
the browser with its own menus and sliders (``updatemenus``, ``sliders``), so the published page works with no
kernel. plotly.js is not fetched from a CDN: the book ships the copy from the ``plotly`` Python package
(``tools/vendor_js.py`` -> ``_vendor/plotly``, served as ``_static/plotly/plotly.min.js``), and ``explorer_html``
loads it relative to the page's content root, so the book works offline.
Introduced in: the explorer page of the book (``book/explorer.md``).
"""

from __future__ import annotations

import hashlib
import html
from typing import Any

import numpy as np

from ..errors import InvalidInputError
from .explorer_panels import METRICS, metric_info, title


def _visibility(
    slots: dict[tuple[int, int], list[int]], n_traces: int, model: int, metric: int
) -> list[bool]:
    shown = set(slots.get((model, metric), []))
    return [i in shown for i in range(n_traces)]


def static_explorer(
    models: dict[str, Any], metrics: list[str] | None = None, start: float = 0.5, height: int = 640
):
    """One plotly figure: a model menu, a metric menu and, per model, a slider over its depths ``0..L``.

    Every panel of every depth is embedded. The two menus act together: choosing a model rewrites the
    visibility each metric button will set, and choosing a metric rewrites that of each model button (plotly
    menus cannot read each other's state). A model's slider restyles all its traces, so switching metric
    keeps the depth. Each slider starts at the depth nearest ``gamma = start``. ``models`` maps each menu label
    to the ``view.explorer.ModelViews`` of its model.
    """
    import plotly.graph_objects as go

    if not models:
        raise InvalidInputError("static_explorer needs at least one model: {label: ModelViews}.")
    metrics = list(METRICS) if metrics is None else [metric_info(m).key for m in metrics]
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
        return dict(
            text=title(names[i], models[names[i]], layer), x=0.01, xanchor="left", y=0.99, yanchor="top"
        )

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
        modebar=dict(orientation="v"),  # the toolbar down the right edge, clear of the title and the legend
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
