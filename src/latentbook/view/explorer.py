"""Per-layer views of a model, and the static explorer of the book's models.

Usage:

1. ``views = ModelViews(name, capture, attention=attn_capture, classes=token_states)``: what the four
   metrics (``explorer_panels.METRICS``) show at each depth ``l = 0..L``, computed once per depth and kept;
2. ``views.panel(metric, l)``: the plotly traces (plain dicts) of one metric at depth ``l``
   (``explorer_panels``). Both front ends draw these: ``widgets.explore`` (live, with a kernel) and
   ``static_explorer.static_explorer`` (no kernel);
3. ``book_explorer(names)``: the static explorer of the book's models and their random-weight twins, from the
   cached captures and the ``binding`` token states the chapters use (``study.runs``), ready to display.

``ModelViews`` runs no model: it reads captures and token states made before. ``book_views`` reads the
book's, the very files chapters 2-8 read (``capturing.cache``, ``study.runs.book_binding_states``): in a book
build they are cached by the chapters, and only a missing one is computed, once, by the capturing wing.
Introduced in: the explorer page of the book (``book/explorer.md``) and the labs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from ..capturing.results import Capture
from ..errors import InvalidInputError
from .explorer_panels import (
    METRICS,
    attention_panel,
    metric_info,
    omega_panel,
    separability_panel,
    spectrum_panel,
)
from .static_explorer import ExplorerHTML, static_explorer

if TYPE_CHECKING:
    from ..analysis.classes import SeparabilityProfile


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
        metric_info(metric)
        if metric == "attention" and self.attention is None:
            return (
                f"No attention statistics for {self.name}: capture with attention=True "
                "(book_capture(name, attention=True))."
            )
        if metric == "separability" and self.classes is None:
            return (
                f"No labelled token states for {self.name}: pass classes=study.runs.book_binding_states(name) "
                "(the binding set of chapter 6)."
            )
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
                self._eigvals = _all_eigvals(self.capture)
            n_eff = spectra.effective_sample_size(self.capture, layer).n_eff
            return spectrum_panel(self._eigvals[layer], n_eff)
        if metric == "attention":
            return attention_panel(self.attention, layer)
        if self._profile is None:
            from ..analysis.classes import separability_profile

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


def _all_eigvals(capture: Capture) -> np.ndarray:
    """``capture.all_eigvals()`` (every depth's covariance spectrum, one batched ``eigvalsh``) on one thread.

    The matrices are small (``d`` of a few hundred): threads barely help on a quiet machine, and on a busy one
    (the book's build shares its cores) the solver's threads wait on each other: one thread was 5-9 times
    faster there (``d = 576``, 2 cores). The panels are the same (every book model checked).
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return capture.all_eigvals()
    finally:
        torch.set_num_threads(threads)


def book_views(name: str) -> ModelViews:
    """``ModelViews`` of one zoo model from the book's cached captures and ``binding`` token states.

    The token states are chapter 6's (``study.runs.book_binding_states``), so the explorer's separability is the
    chapter's and costs no forward pass of its own.
    """
    from ..capturing.cache import book_capture
    from ..study.runs import binding_step_names, book_binding_states

    residual = book_capture(name)  # a book model's carries its attention: one file read for both
    return ModelViews(
        name,
        residual,
        attention=residual if residual.attention is not None else book_capture(name, attention=True),
        classes=book_binding_states(name),
        step_names=binding_step_names(),
    )


def book_explorer(names: list[str], with_null_twins: bool = True, labels: dict[str, str] | None = None):
    """The static explorer of the book's models (and each one's random-weight twin), ready to display.

    Every panel of every depth is computed here, at build time, from cached captures; ``labels`` maps a run's
    label (``"smollm2-135m"``, ``"random:smollm2-135m"``) to the name its menu shows.
    """
    from ..study.runs import book_runs

    kinds = ("trained", "random twin") if with_null_twins else ("trained",)
    labels = labels or {}
    models = {}
    for run in book_runs(tuple(names), kinds):
        views = book_views(run.capture_name)
        views.precompute()
        models[labels.get(run.label, run.label)] = views
    return ExplorerHTML(static_explorer(models))
