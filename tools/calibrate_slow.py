"""Calibrate the slow families (``calibration.StatisticFamily.slow``: the spike counts, each case refitting the
Marchenko-Pastur law some 150 times) and keep the table in ``results/calibration/slow_families.json`` with its
provenance, for chapter 8 to show beside the families it calibrates as it builds::

    .venv/bin/python tools/calibrate_slow.py                # 10 cases per family (about 20 min on 2 cores)
    .venv/bin/python tools/calibrate_slow.py --n-cases 2    # a smoke test, written to --out

Rerun it whenever an estimator of those claims changes: the file records ``calibration.source_hash()``
of the code it ran on, and chapter 8 says so when the code has changed since.
"""

from __future__ import annotations

from provenance import ROOT, table_main

from latentbook.analysis import calibration

if __name__ == "__main__":
    table_main(
        __doc__,
        "calibrate_slow.py",
        ROOT / "results" / "calibration" / "slow_families.json",
        10,
        calibration.__name__,
        lambda n_cases, seed: calibration.calibrate_statistics(n_cases=n_cases, seed=seed, slow=True),
    )
