"""The coverage of the book's intervals as the coverage appendix shows it: read from ``results/calibration/``, with
whether the code it ran on is still the package's.

``analysis.interval_coverage.coverage(n_seeds=N_SEEDS, seed=0)`` plants ``N_SEEDS`` data sets per estimator and
takes some 25 s of one core on every fresh build, so ``tools/interval_coverage.py`` runs it once for the code and
keeps the table; ``book/appendix/coverage.md`` calls ``interval_coverage_record(results_dir)`` (a
``table_record.TableRecord``) and says when the code has changed since: the hash of every module
``latentbook.analysis.interval_coverage`` imports (``_code_hash.module_hashes``).
"""

from __future__ import annotations

from pathlib import Path

from .._code_hash import digest, module_hashes
from .table_record import TableRecord, load_table_record

FILE = Path("calibration") / "interval_coverage.json"
SCRIPT = "interval_coverage.py"
PRODUCER = "latentbook.analysis.interval_coverage"
N_SEEDS = 100  # planted data sets per estimator: the target band (COVERAGE_TARGET) is that of 100 or more


def interval_coverage_record(results_dir: str | Path) -> TableRecord:
    """``results_dir / calibration / interval_coverage.json``: the table of ``interval_coverage.coverage``, its
    provenance and ``current`` (every module its producer imports unchanged since).

    Parameters
    ----------
    results_dir
        The results folder (``paths.find_results_dir()``); a missing record is refused, naming its script.

    Returns
    -------
    TableRecord
        ``table`` (one row per estimator: observed coverage, its Wilson interval, spread, targets met),
        ``provenance`` (``n_cases``: the data sets per row, ``seed``, ``date``, ``code``) and ``current``.

    Examples
    --------
    >>> from latentbook.study.paths import find_results_dir
    >>> record = interval_coverage_record(find_results_dir())
    >>> int(record.provenance["n_cases"]), bool(record.table["n"].min() >= N_SEEDS)
    (100, True)
    """
    return load_table_record(results_dir, FILE, digest(module_hashes(PRODUCER)), SCRIPT)
