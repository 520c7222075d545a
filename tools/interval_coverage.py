"""Measure how often the book's intervals cover the truth on planted data (``interval_coverage.coverage``) and keep
the table in ``results/calibration/interval_coverage.json`` with its provenance, for the coverage appendix to show
without running it on every fresh build::

    .venv/bin/python tools/interval_coverage.py                  # 100 data sets per estimator (about 25 s)
    .venv/bin/python tools/interval_coverage.py --n-cases 5 --out /tmp/smoke.json

Rerun it (``latentbook records run interval-coverage``) whenever ``latentbook records status`` says it is stale: the
file records the hash of every module ``latentbook.analysis.interval_coverage`` imports.
"""

from __future__ import annotations

from provenance import ROOT, table_main

from latentbook.analysis import interval_coverage
from latentbook.study import coverage_record

if __name__ == "__main__":
    table_main(
        __doc__,
        coverage_record.SCRIPT,
        ROOT / "results" / coverage_record.FILE,
        coverage_record.N_SEEDS,
        coverage_record.PRODUCER,
        lambda n_cases, seed: interval_coverage.coverage(n_seeds=n_cases, seed=seed),
    )
