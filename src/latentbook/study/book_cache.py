"""The book's shared work on every run, computed once before its pages execute, one model per process.

Chapters 1 to 9 and ``latentbook verdict`` read the same captures of the book's runs (each model, its random twin,
its run on shuffled words), the same Jacobian-vector gains, token states of the binding prompts, measurements and
depth landmarks, each cached on disk keyed on the code and inputs that make it (``capturing.cache``,
``measurement_cache``). Pages executed two at a time wait on each other's locks for them, and the verdict page,
which needs all of them, became the build's critical path. ``warm_book(jobs)`` makes them first, the three models in
``jobs`` processes (the largest first), each on one thread: the pages then read them. It changes no value (the
caches are those the pages would fill) and fails no build: a model whose work fails is reported and left to the
pages, which raise the error where it belongs.

Usage: ``warm_book(jobs=2)`` (``tools/build_book.sh`` runs ``tools/warm_book.py`` before the pages).
Introduced in: the contributing guide (the book build).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor

from ..capturing.cache import BOOK_MODELS
from ..errors import InvalidInputError
from .runs import Run, book_runs

# The models by the CPU time their runs take on one core (Gemma 3 about 400 s, SmolLM2 350 s, MiniLM 40 s), the
# largest first, so that two workers finish close together.
BY_COST = ("gemma3-270m", "smollm2-135m", "minilm-l6")


def warm_run(run: Run) -> None:
    """Everything the book reads of ``run``: its measurements, which make its capture (with attention statistics,
    for a model and its twin) and its model's gains first, the binding-prompt states of its model (not for
    shuffled words) and its landmarks."""
    from .measurement_cache import landmarks_of, measurements_of

    measurements_of(run, capture_missing=True)
    run.binding_states()
    landmarks_of(run)


def warm_model(model: str) -> tuple[str, float, str | None]:
    """``warm_run`` of each of ``model``'s runs, on one thread: ``(model, seconds, None)``, or the traceback of
    what failed in place of None (the rest of the model's runs are then left to the pages)."""
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    started = time.perf_counter()
    try:
        with threadpool_limits(1):
            for run in book_runs(models=(model,)):
                warm_run(run)
    except Exception:  # reported; the page that needs it raises it again where it belongs
        return model, time.perf_counter() - started, traceback.format_exc()
    return model, time.perf_counter() - started, None


def warm_book(
    jobs: int = 2,
    models: Sequence[str] = BOOK_MODELS,
    report: Callable[[str], None] = print,
    work: Callable[[str], tuple[str, float, str | None]] = warm_model,
) -> list[tuple[str, float, str | None]]:
    """``work(model)`` (``warm_model``) for each of ``models`` in ``jobs`` processes (1: in this one), the costliest
    first (``BY_COST``); each result is given to ``report`` as it finishes, and all are returned in finishing order."""
    if jobs < 1:
        raise InvalidInputError(
            f"jobs must be at least 1 (1: one model after the other, in this process), got {jobs}."
        )
    order = sorted(models, key=lambda m: BY_COST.index(m) if m in BY_COST else -1)
    results = []
    if jobs == 1:
        finished = map(work, order)
    else:
        pool = ProcessPoolExecutor(max_workers=min(jobs, len(order)))
        finished = pool.map(work, order)
    try:
        for model, seconds, failure in finished:
            results.append((model, seconds, failure))
            report(
                f"{model}: {seconds:.0f} s"
                + (f", failed (the pages will say why):\n{failure}" if failure else "")
            )
    finally:
        if jobs != 1:
            pool.shutdown()
    return results
