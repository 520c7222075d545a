"""Calibration cases run one at a time or over worker processes, each yielded as soon as it finishes, so that a
run of hours keeps what it has done: ``tools/provenance.calibration_main`` appends every finished case to a
checkpoint and a rerun carries on from it.

Usage: ``for case, records in run_cases(run_case, range(74), seed=0, jobs=2): ...``.
Introduced in: chapter 8 (the end-to-end calibration).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator


def run_cases(
    run_case: Callable[[int, int], list[dict]],
    cases: Iterable[int],
    seed: int = 0,
    jobs: int = 1,
    initializer: Callable[[], None] | None = None,
) -> Iterator[tuple[int, list[dict]]]:
    """``(case, run_case(case, seed))`` for each case, in the order they finish (case order with ``jobs <= 1``).
    ``run_case`` must be picklable (a module-level function or a ``functools.partial`` of one) when
    ``jobs > 1``; ``initializer`` runs in each worker, or here when ``jobs <= 1`` (so that a setting such as one
    thread per process gives the same numbers either way); a consumer that stops early cancels the cases not yet
    started."""
    cases = list(cases)
    if jobs <= 1:
        if initializer is not None:
            initializer()
        for case in cases:
            yield case, run_case(case, seed)
        return
    from concurrent.futures import ProcessPoolExecutor, as_completed

    pool = ProcessPoolExecutor(jobs, initializer=initializer)
    try:
        futures = {pool.submit(run_case, case, seed): case for case in cases}
        for future in as_completed(futures):
            yield futures[future], future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def in_case_order(finished: Iterable[tuple[int, list[dict]]]) -> list[dict]:
    """The records of ``run_cases``' output, case by case (the same list whatever order the cases finished in)."""
    return [record for _, records in sorted(finished, key=lambda item: item[0]) for record in records]
