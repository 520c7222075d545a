"""The judges' calibration on planted statistics as the book shows it: read from ``results/calibration/``, with
whether the code it ran on is still the package's (the hash of every module ``PRODUCER`` imports).

``calibration.calibrate_statistics(n_cases=N_CASES, seed=0)`` takes some 140 s of one core, the longest part of
the criteria appendix on a fresh machine, so ``tools/calibrate_statistics.py`` runs it once for the code and keeps
the table; the appendix calls ``statistic_families(results_dir)`` (a ``table_record.TableRecord``) and says when the
code has changed since. The slow families (``slow_calibration``) are kept the same way.
"""

from __future__ import annotations

from pathlib import Path

from .._code_hash import digest, module_hashes
from .table_record import TableRecord, load_table_record

FILE = Path("calibration") / "statistic_families.json"
SCRIPT = "calibrate_statistics.py"
PRODUCER = "latentbook.analysis.calibration"
N_CASES = 40  # cases per family (half as many for the costly ones: calibrate_statistics' n_token_cases)


def statistic_families(results_dir: str | Path) -> TableRecord:
    """``results_dir / calibration / statistic_families.json``: the table of ``calibration.calibrate_statistics``
    (every family but the slow ones), its provenance, and ``current``: the code is unchanged since.

    Parameters
    ----------
    results_dir
        The results folder (``paths.find_results_dir()``); a missing record is refused, naming its script.

    Returns
    -------
    TableRecord
        ``table`` (one row per claim and family), ``provenance`` (``n_cases``, ``seed``, ``date``, ``code``) and
        ``current``.

    Examples
    --------
    >>> from latentbook.study.paths import find_results_dir
    >>> record = statistic_families(find_results_dir())
    >>> int(record.provenance["n_cases"]), sorted(set(record.table["planted"]))
    (40, ['absent', 'present'])
    """
    return load_table_record(results_dir, FILE, digest(module_hashes(PRODUCER)), SCRIPT)
