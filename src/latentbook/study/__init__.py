"""The experiment: which runs the book measures (``runs``) and the verdict table computed from them
(``verdict_table``).

``__all__`` names the public modules: import them as ``from latentbook.study import runs, verdict_table``. The
others (``capture_report``, ``cases``, ``table_record``) serve the command line, the calibration scripts and the
record readers. Nothing is imported here, so ``import latentbook`` stays light.
"""

__all__ = [
    "book_cache",
    "chapters",
    "coverage_record",
    "evidence",
    "ladder_landmarks",
    "ladder_rows",
    "landmark_calibration",
    "measure",
    "measurement_cache",
    "paths",
    "planted_calibration",
    "power_confirmation",
    "power_record",
    "record_history",
    "records",
    "rows",
    "run_landmarks",
    "runs",
    "slow_calibration",
    "statistic_families",
    "verdict_table",
]
