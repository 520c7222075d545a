"""Calibrate the judges on planted statistics (``calibration.calibrate_statistics``: every family but the slow
ones) and keep the table in ``results/calibration/statistic_families.json`` with its provenance, for the criteria
appendix of chapter 8 to show without running it on every fresh build::

    .venv/bin/python tools/calibrate_statistics.py               # 40 cases per family (about 140 s on one core)
    .venv/bin/python tools/calibrate_statistics.py --n-cases 2 --out /tmp/smoke.json

Rerun it (``latentbook records run statistic-calibration``) whenever ``latentbook records status`` says it is
stale: the file records the hash of every module ``latentbook.analysis.calibration`` imports, and the appendix says
so when one has changed since.
"""

from __future__ import annotations

from provenance import ROOT, table_main

from latentbook.analysis import calibration
from latentbook.study import statistic_families

if __name__ == "__main__":
    table_main(
        __doc__,
        statistic_families.SCRIPT,
        ROOT / "results" / statistic_families.FILE,
        statistic_families.N_CASES,
        statistic_families.PRODUCER,
        lambda n_cases, seed: calibration.calibrate_statistics(n_cases=n_cases, seed=seed),
    )
