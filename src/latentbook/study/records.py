"""Every long-run record the book reads, in one registry, and whether each is the current code's (issue 51).

A record is computed offline (hours of both cores: planted models, training a ladder) and kept in ``results/`` with
the hash of the code that computed it; the book shows it and says when that code has changed since. ``RECORDS``
names each one: its file, the command that writes it again, and the reader that says whether it is current (each
record's own ``source_hash`` or ``measured_by``). ``status()`` reads them all, ``latentbook records status``
prints them:

    name                   state     file                                       rerun with
    planted calibration    current   results/calibration/planted_models.json    python tools/calibrate_planted.py ...

A state is "current", "stale: <why>" (the code it hashes changed since; for the ladder, how many of its models),
or "missing" / "unreadable: <why>".
Introduced in: the contributing guide (records and their producers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from ..errors import LatentbookError

CURRENT, MISSING = "current", "missing"
CHANGED = "stale: the code it hashes has changed since"


@dataclass(frozen=True)
class Record:
    """A long-run record: ``file`` under the results folder, the ``command`` that writes it, and ``check(results)``,
    its state ("current" or "stale: ..."); a reader's ``LatentbookError`` makes it "missing" or "unreadable"."""

    name: str
    file: str
    command: str
    check: Callable[[Path], str]


def _current(flag: bool) -> str:
    return CURRENT if flag else CHANGED


def _planted(results: Path) -> str:
    from . import planted_calibration

    return _current(planted_calibration.load_record(results).current)


def _power_confirmation(results: Path) -> str:
    from . import power_confirmation

    return _current(power_confirmation.load_confirmation(results).current)


def _jump_power(results: Path) -> str:
    from . import power_record

    return _current(power_record.load_power_record(results).current)


def _landmarks(results: Path) -> str:
    from . import landmark_calibration

    return _current(landmark_calibration.load_record(results).current)


def _slow(results: Path) -> str:
    from . import slow_calibration

    return _current(slow_calibration.slow_families(results).current)


def _ladder_measurements(folder: str, results: Path) -> str:
    from ..ladder import report

    measured = report.load_measurements(results / folder / report.MEASUREMENTS)
    stale = report.stale_models(measured)
    n = sum(1 + len(measured["models"][rung].get("checkpoints", {})) for rung in measured["rungs"])
    return f"stale: {len(stale)} of {n} models measured by older code" if stale else CURRENT


def _ladder_landmarks(folder: str, results: Path) -> str:
    from . import ladder_landmarks

    record = ladder_landmarks.load_record(results / folder / ladder_landmarks.FILE)
    return _current(ladder_landmarks.is_current(record))


RECORDS: tuple[Record, ...] = (
    Record(
        "planted calibration",
        "calibration/planted_models.json",
        "python tools/calibrate_planted.py --jobs 2",
        _planted,
    ),
    Record(
        "power confirmation",
        "calibration/power_confirmation.json",
        "python tools/confirm_power.py",
        _power_confirmation,
    ),
    Record("jump power", "calibration/jump_power.json", "python tools/jump_power.py", _jump_power),
    Record(
        "landmark calibration",
        "calibration/landmarks.json",
        "python tools/calibrate_landmarks.py",
        _landmarks,
    ),
    Record("slow families", "calibration/slow_families.json", "python tools/calibrate_slow.py", _slow),
    *(
        Record(
            f"ladder measurements ({folder})",
            f"{folder}/measurements.json",
            "latentbook train-ladder --measure",  # ladder.report.COMMAND
            partial(_ladder_measurements, folder),
        )
        for folder in ("ladder", "ladder-v2")
    ),
    Record(
        "ladder landmarks (ladder-v2)",
        "ladder-v2/landmarks.json",
        "python tools/ladder_landmarks.py",
        partial(_ladder_landmarks, "ladder-v2"),
    ),
)


@dataclass(frozen=True)
class RecordStatus:
    """One record's line of ``status``."""

    name: str
    state: str
    file: str
    command: str


def status(results_dir: str | Path | None = None) -> list[RecordStatus]:
    """The state of every record of ``RECORDS`` under ``results_dir`` (default: ``paths.find_results_dir()``)."""
    from .paths import find_results_dir

    results = Path(results_dir) if results_dir is not None else find_results_dir()
    lines = []
    for record in RECORDS:
        path = results / record.file
        if not path.exists():
            state = MISSING
        else:
            try:
                state = record.check(results)
            except (LatentbookError, ValueError, KeyError, TypeError) as exc:
                state = f"unreadable: {exc}"
        lines.append(RecordStatus(record.name, state, str(path), record.command))
    return lines
