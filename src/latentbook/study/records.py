"""Every long-run record the book reads, in one registry, and whether each is the current code's (issue 51).

A record is computed offline (hours of both cores: planted models, training a ladder) and kept in ``results/`` with
the hash of the code that computed it; the book shows it and says when that code has changed since. ``RECORDS``
names each one: its file, the command that writes it again (and, where its producer can, the command that keeps it
for new code once a few of its cases reproduce: ``restamp``), and the reader that says whether it is current: a
calibration record keeps the hash of every module its producer imports (``_code_hash.module_hashes``, read from the
import graph), so its state names the module that changed; the ladder's records keep their own ``measured_by``. ``status()`` reads them all, ``latentbook records status``
prints them, and ``latentbook records run NAME`` / ``restamp NAME`` run a record's producer from the repository
(``producer_argv``):

    name                   state     file                                       rerun with
    planted calibration    current   results/calibration/planted_models.json    python tools/calibrate_planted.py ...

A state is "current", "stale: <why>" ("stale: latentbook.analysis.omega changed"; for the ladder, how many of its models),
or "missing" / "unreadable: <why>".
Introduced in: the contributing guide (records and their producers).
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from ..errors import InvalidInputError, LatentbookError
from . import coverage_record, statistic_families

CURRENT, MISSING = "current", "missing"
CHANGED = "stale: the code it hashes has changed since"


@dataclass(frozen=True)
class Record:
    """A long-run record: ``file`` under the results folder, the ``command`` that writes it, and how its state is
    read ("current" or "stale: ..."): from the hashes of the modules that ``producer`` imports (``_code_state``),
    or by ``check(results)`` for a record that keeps other hashes (the ladder's); a reader's ``LatentbookError``
    makes it "missing" or "unreadable". ``restamp``: the command that keeps the record for new code once its spot
    cases reproduce, None where its producer has none."""

    name: str
    file: str
    command: str
    producer: str | None = None
    check: Callable[[Path], str] | None = None
    restamp: str | None = None

    def state(self, results: Path) -> str:
        """ "current" or "stale: <why>" of the record under ``results`` (the file exists)."""
        if self.check is not None:
            return self.check(results)
        return _code_state(self.file, self.producer, results)

    @property
    def slug(self) -> str:
        """The record's name as one word for the command line: "ladder measurements (ladder-v2)" ->
        "ladder-measurements-ladder-v2"."""
        return re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")


def _code_state(file: str, producer: str, results: Path) -> str:
    """ "current" while the record's ``provenance["code"]`` is ``_code_hash.module_hashes(producer)`` now, else
    "stale: <modules> changed" (``_code_hash.stale_because``)."""
    import json

    from .._code_hash import module_hashes, stale_because

    provenance = json.loads((results / file).read_text(encoding="utf-8"))["provenance"]
    return stale_because(provenance.get("code"), module_hashes(producer)) or CURRENT


def _ladder_measurements(folder: str, results: Path) -> str:
    from ..ladder import report

    measured = report.load_measurements(results / folder / report.MEASUREMENTS)
    stale = report.stale_models(measured)
    n = sum(1 + len(measured["models"][rung].get("checkpoints", {})) for rung in measured["rungs"])
    return f"stale: {len(stale)} of {n} models measured by older code" if stale else CURRENT


def _ladder_landmarks(folder: str, results: Path) -> str:
    from . import ladder_landmarks

    record = ladder_landmarks.load_record(results / folder / ladder_landmarks.FILE)
    return CURRENT if ladder_landmarks.is_current(record) else CHANGED


RECORDS: tuple[Record, ...] = (
    Record(
        "planted calibration",
        "calibration/planted_models.json",
        "python tools/calibrate_planted.py --jobs 2",
        producer="latentbook.study.planted_calibration",
        restamp="python tools/calibrate_planted.py --jobs 2 --restamp",
    ),
    Record(
        "power confirmation",
        "calibration/power_confirmation.json",
        "python tools/confirm_power.py",
        producer="latentbook.study.power_confirmation",
    ),
    Record(
        "jump power",
        "calibration/jump_power.json",
        "python tools/jump_power.py",
        producer="latentbook.analysis.jump_power",
    ),
    Record(
        "landmark calibration",
        "calibration/landmarks.json",
        "python tools/calibrate_landmarks.py",
        producer="latentbook.study.landmark_calibration",
    ),
    Record(
        "statistic calibration",
        "calibration/statistic_families.json",
        "python tools/calibrate_statistics.py",
        producer=statistic_families.PRODUCER,
    ),
    Record(
        "interval coverage",
        "calibration/interval_coverage.json",
        "python tools/interval_coverage.py",
        producer=coverage_record.PRODUCER,
    ),
    Record(
        "slow families",
        "calibration/slow_families.json",
        "python tools/calibrate_slow.py",
        producer="latentbook.analysis.calibration",
    ),
    Record(
        "ladder measurements (ladder)",
        "ladder/measurements.json",
        "latentbook train-ladder --measure",  # ladder.report.COMMAND
        check=partial(_ladder_measurements, "ladder"),
    ),
    Record(
        "ladder measurements (ladder-v2)",
        "ladder-v2/measurements.json",
        "latentbook train-ladder --out results/ladder-v2 --seeds 0,1,2 --balanced --checkpoint-every 500 "
        "--checkpoint-rungs l4-d64,l8-d64 --jobs 2 --measure",  # ladder.report.V2_COMMAND
        check=partial(_ladder_measurements, "ladder-v2"),
    ),
    Record(
        "ladder landmarks (ladder-v2)",
        "ladder-v2/landmarks.json",
        "python tools/ladder_landmarks.py",
        check=partial(_ladder_landmarks, "ladder-v2"),
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
                state = record.state(results)
            except (LatentbookError, ValueError, KeyError, TypeError) as exc:
                state = f"unreadable: {exc}"
        lines.append(RecordStatus(record.name, state, str(path), record.command))
    return lines


def find(name: str) -> Record:
    """The record called ``name`` (its name or its ``slug``, any case), or an error listing the slugs."""
    wanted = name.strip().lower()
    for record in RECORDS:
        if wanted in (record.name.lower(), record.slug):
            return record
    slugs = ", ".join(record.slug for record in RECORDS)
    raise InvalidInputError(f"No record called {name!r}. The records are: {slugs}.")


def producer_argv(
    record: Record, action: str, repository: str | Path, extra: Sequence[str] = ()
) -> list[str]:
    """The command line that ``run``s or ``restamp``s ``record`` from ``repository`` (its root, holding ``tools/``
    and ``benchmarks/``): the record's command with ``python`` as this interpreter and ``latentbook`` as ``python
    -m latentbook``, then ``extra``. Refused where the producer has no such action or its script is not there."""
    if action not in ("run", "restamp"):
        raise InvalidInputError(f"A record's action is 'run' or 'restamp', got {action!r}.")
    command = record.command if action == "run" else record.restamp
    if command is None:
        raise InvalidInputError(
            f"The {record.name} record has no restamp: its producer keeps no spot cases to check new code "
            f"against. Run it again: latentbook records run {record.slug}"
        )
    argv = shlex.split(command)
    if argv[0] == "python":
        script = Path(repository) / argv[1]
        if not script.is_file():
            raise InvalidInputError(
                f"{argv[1]} is not in {repository}: the {record.name} record's producer is a script of the "
                "book's repository. Run this from a clone of it (or pass --repository)."
            )
        argv = [sys.executable, *argv[1:]]
    elif argv[0] == "latentbook":
        argv = [sys.executable, "-m", "latentbook", *argv[1:]]
    return [*argv, *extra]
