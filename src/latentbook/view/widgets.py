"""``lb.widgets.explore()``: choose a model, a depth and a metric in a notebook, and see the figure change.

Usage:

1. ``lb.widgets.explore()`` in Jupyter: the book's embedded models and their random-weight twins, read
   from the book's capture cache (``capturing.cache.book_capture``); or
   ``lb.widgets.explore(captures={"mine": cap})`` for captures you made (a ``Capture``, or a
   ``view.explorer.ModelViews`` when you also have attention statistics or labelled token states);
2. move the depth slider (it shows ``gamma = l / L``), pick a metric (Omega distribution against the
   Gaussian reference, eigenvalue spectrum against the fitted Marchenko–Pastur law, attention entropy per
   head, class separability): every panel of the chosen model is computed when the model is loaded and kept
   (``view.explorer.ModelViews``), so a change only redraws;
3. a model whose captures are not saved yet gets a **Capture** button: the capture runs in a thread with a
   progress bar, and **Cancel** stops it after the batch in flight (nothing half-done is saved).

The figure is a plotly ``FigureWidget`` (it needs ``anywidget`` in the kernel's environment); the same panels
feed the static explorer of the published book (``view.static_explorer``).
Introduced in: the explorer page of the book and the labs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence

import ipywidgets as widgets
import plotly.graph_objects as go

from ..capturing.cache import BOOK_CAPTURES, BOOK_N_PROMPTS, book_capture, book_capture_path
from ..capturing.results import Capture, load_capture
from ..errors import InvalidInputError
from ..study.runs import binding_step_names, book_binding_states, book_binding_states_path
from .explorer import ModelViews
from .explorer_panels import METRICS, title

SOURCES = ("residual", "attention", "classes")  # what a book model's views are made of
_NEEDS = {"omega": "residual", "spectrum": "residual", "attention": "attention", "separability": "classes"}


def figure_layout() -> dict:
    """The live explorer's figure layout: the title top left, a legend (two rows in the spectrum view) growing up
    from the plot into the top margin below it, the toolbar down the right edge, clear of both."""
    return dict(
        height=500,
        margin=dict(t=110, b=50, l=70, r=40),
        template="plotly_white",
        barmode="overlay",
        bargap=0.05,
        title=dict(x=0.01, xanchor="left", y=0.98, yanchor="top"),
        legend=dict(orientation="h", x=0, y=1.02, yanchor="bottom"),
        modebar=dict(orientation="v"),
    )


class _Cancelled(Exception):
    """Raised from the capture's ``on_batch`` hook when Cancel was pressed."""


class Explorer(widgets.VBox):
    """The explorer widget. ``figure`` is the plotly ``FigureWidget``; ``model``, ``layer``, ``metric`` the
    controls; ``capture_button``, ``cancel_button``, ``progress``, ``status`` the capture row.
    ``last_update_s`` is how long the last change took to redraw."""

    def __init__(
        self,
        models: Sequence[str],
        captures: Mapping[str, Capture | ModelViews],
        metric: str,
        n_prompts: int,
    ):
        self._given: dict[str, ModelViews] = {}
        for name, item in captures.items():
            self._given[name] = item if isinstance(item, ModelViews) else ModelViews(name, item)
        self._views: dict[str, ModelViews] = dict(self._given)
        self.n_prompts = n_prompts
        self.last_update_s = 0.0
        self._thread: threading.Thread | None = None
        self._cancel = threading.Event()
        self._lock = threading.RLock()

        names = list(dict.fromkeys([*self._given, *models]))
        if not names:
            raise InvalidInputError("Nothing to explore: pass model names, or captures={'name': capture}.")
        self.model = widgets.Dropdown(options=names, value=names[0], description="model")
        self.metric = widgets.Dropdown(
            options=[(m.label, m.key) for m in METRICS.values()], value=metric, description="metric"
        )
        self.layer = widgets.IntSlider(value=0, min=0, max=1, description="depth l", continuous_update=True)
        self.gamma = widgets.HTML()
        self.figure = go.FigureWidget(layout=figure_layout())
        self.capture_button = widgets.Button(description="Capture", icon="play", button_style="primary")
        self.cancel_button = widgets.Button(description="Cancel", icon="stop", disabled=True)
        self.progress = widgets.FloatProgress(value=0.0, min=0.0, max=1.0, description="progress")
        self.status = widgets.HTML()
        self.capture_button.on_click(self.start_capture)
        self.cancel_button.on_click(self.cancel)
        super().__init__(
            [
                widgets.HBox([self.model, self.metric]),
                widgets.HBox([self.layer, self.gamma]),
                self.figure,
                widgets.HBox([self.capture_button, self.cancel_button, self.progress]),
                self.status,
            ]
        )
        self.model.observe(self._on_model, names="value")
        self.metric.observe(self._on_metric, names="value")
        self.layer.observe(self._on_layer, names="value")
        self._select(names[0])

    # --- what is saved ------------------------------------------------------------------------------------
    def _cached(self, name: str, source: str) -> bool:
        if source == "classes":
            return book_binding_states_path(name).is_file()
        return book_capture_path(name, attention=source == "attention", n_prompts=self.n_prompts).is_file()

    def missing_sources(self, name: str) -> list[str]:
        """The saved data ``name`` still lacks ("residual", "attention", "classes"); none for given captures."""
        if name in self._given:
            return []
        return [s for s in SOURCES if not self._cached(name, s)]

    def _load(self, name: str) -> ModelViews | None:
        """The views of ``name`` from whatever is saved (None without a residual capture), all precomputed."""
        if name in self._views:
            return self._views[name]
        if not self._cached(name, "residual"):
            return None
        views = ModelViews(
            name,
            load_capture(book_capture_path(name, n_prompts=self.n_prompts)),
            attention=(
                load_capture(book_capture_path(name, attention=True, n_prompts=self.n_prompts))
                if self._cached(name, "attention")
                else None
            ),
            classes=book_binding_states(name) if self._cached(name, "classes") else None,
            step_names=binding_step_names(),
        )
        views.precompute()
        self._views[name] = views
        return views

    # --- reacting to the controls --------------------------------------------------------------------------
    def _on_model(self, change) -> None:
        self._select(change["new"])

    def _on_metric(self, change) -> None:
        self._redraw(rebuild=True)

    def _on_layer(self, change) -> None:
        self._redraw(rebuild=False)

    def _select(self, name: str) -> None:
        self.status.value = f"Loading {name}…"
        views = self._load(name)
        if views is not None:
            with self.layer.hold_trait_notifications():
                self.layer.max = views.n_layers
                self.layer.value = min(self.layer.value, views.n_layers)
        self._redraw(rebuild=True)

    def _redraw(self, rebuild: bool) -> None:
        """Show the chosen model, metric and depth; ``rebuild`` replaces the traces, else only their data."""
        start = time.perf_counter()
        with self._lock:
            name, metric, layer = self.model.value, self.metric.value, self.layer.value
            views = self._views.get(name)
            reason = self._why_not(name, views, metric)
            info = METRICS[metric]
            with self.figure.batch_update():
                if reason is not None:
                    self.figure.data = []
                    self.figure.layout.title.text = reason
                    self.gamma.value = ""
                elif rebuild or len(self.figure.data) == 0:
                    self.figure.data = []
                    self.figure.add_traces(views.panel(metric, layer))
                else:
                    for trace, new in zip(self.figure.data, views.panel(metric, layer)):
                        trace.x, trace.y = new["x"], new["y"]
                if reason is None:
                    self.figure.layout.title.text = title(name, views, layer)
                    self.gamma.value = f"gamma = l / L = {views.gamma[layer]:.3f}"
                self.figure.layout.xaxis.title.text = info.x_title
                self.figure.layout.yaxis.title.text = info.y_title
            running = self._thread is not None and self._thread.is_alive()
            self.capture_button.disabled = running or not self.missing_sources(name)
            if not running:
                self.status.value = "" if reason is None else reason
        self.last_update_s = time.perf_counter() - start

    def _why_not(self, name: str, views: ModelViews | None, metric: str) -> str | None:
        if views is None:
            return f"No saved capture of {name} yet: press Capture."
        reason = views.missing(metric)
        if reason is not None and name not in self._given:
            return f"{METRICS[metric].label} of {name} is not saved yet: press Capture."
        return reason

    # --- capturing -----------------------------------------------------------------------------------------
    def start_capture(self, _button=None) -> threading.Thread | None:
        """Capture what the chosen model lacks, in a thread; returns the thread (None if nothing to do)."""
        name = self.model.value
        jobs = self.missing_sources(name)
        if not jobs or (self._thread is not None and self._thread.is_alive()):
            return None
        self._cancel.clear()
        self.progress.value = 0.0
        self.capture_button.disabled, self.cancel_button.disabled = True, False
        self.status.value = f"Capturing {name}: {', '.join(jobs)}…"
        self._thread = threading.Thread(target=self._run, args=(name, jobs), daemon=True)
        self._thread.start()
        return self._thread

    def cancel(self, _button=None) -> None:
        """Stop the running capture after the batch in flight."""
        self._cancel.set()
        self.status.value = "Cancelling after the current batch…"

    def _run(self, name: str, jobs: list[str]) -> None:
        try:
            for k, job in enumerate(jobs):
                if self._cancel.is_set():
                    raise _Cancelled

                def on_batch(done: int, total: int, k: int = k) -> None:
                    self.progress.value = (k + done / total) / len(jobs)
                    if self._cancel.is_set():
                        raise _Cancelled

                if job == "classes":
                    book_binding_states(name)
                else:
                    book_capture(
                        name, attention=job == "attention", n_prompts=self.n_prompts, on_batch=on_batch
                    )
                self.progress.value = (k + 1) / len(jobs)
            self._views.pop(name, None)
            message = f"Captured {name}."
        except _Cancelled:
            message = f"Cancelled: the unfinished capture of {name} was not saved."
        except Exception as exc:  # shown in the widget: a thread has no one else to report to
            message = f"Capture of {name} failed: {type(exc).__name__}: {exc}"
        self.cancel_button.disabled = True
        self._thread = None
        if self.model.value == name:
            self._select(name)
        self.status.value = message


def explore(
    models: Sequence[str] | None = None,
    captures: Mapping[str, Capture | ModelViews] | None = None,
    *,
    metric: str = "omega",
    n_prompts: int = BOOK_N_PROMPTS,
) -> Explorer:
    """An explorer of ``models`` (zoo names; default: the book's embedded models and their random twins) and
    of ``captures`` (``{label: Capture or ModelViews}``), opened on ``metric``.

    Book models are read from the book's capture cache (the first ``n_prompts`` prompts of ``general``);
    the Capture button fills the cache for a model that lacks it.
    """
    if metric not in METRICS:
        raise InvalidInputError(f"Unknown metric {metric!r}: choose one of {list(METRICS)}.")
    if models is None:
        models = [] if captures else list(BOOK_CAPTURES)
    if isinstance(models, str):
        models = [models]
    return Explorer(list(models), dict(captures or {}), metric, n_prompts)
