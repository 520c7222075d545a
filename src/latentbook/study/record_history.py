"""The earlier stages of the planted calibration record, kept in one file for the criteria appendix's before/after.

Each time a fix to a judge or a plant changed the end-to-end record (``planted_calibration.FILE``), the appendix
kept the record as it was to show what the fix changed. Those stages live in one file,
``results/calibration/planted_history.json`` (``HISTORY_FILE``): ``{"stages": {name: {"provenance", "records",
"note"}}}``, each stage's provenance as its run wrote it, its records only of the families the appendix reads of it
(``study.chapters.criteria_planted`` and ``criteria_flow``), and ``note``: what changed after it (``STAGES``).

Usage: ``load_stage(results_dir, "before code share")`` is a ``planted_calibration.PlantedTable`` (never
``current``: an earlier stage is history); ``keep_stage(results_dir, name, families)`` adds the record as it is
now to the history, before a fix changes it (its name and note first added to ``STAGES``).
Introduced in: chapter 8's appendix.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from .._files import atomic_write
from ..errors import InvalidInputError
from . import planted_calibration as pc

HISTORY_FILE = pc.FILE.with_name("planted_history.json")
# every stage, oldest first, with what changed after it
STAGES: dict[str, str] = {
    "before position profile": "the cleaned spectral rows then removed each coordinate's position profile, and "
    "norm growth stopped passing them",
    "flow before steady": "the contraction row then asked for a steady contraction (the median block's relative "
    "gain below MAX_Q too)",
    "before twin margin": "judge_concentration then asked for a fall beyond the twin's by the bar's own factor, "
    "not only below it",
    "before raw beside cleaned": "the raw spectral rows then held only beside their cleaned rows, the later layers "
    "stopped reading rogue coordinates and a twin with a code of its own wrote as much as its model",
    "before code share": "each class-code prototype then touched CODE_SHARE of the coordinates, not 8 at every width",
}


def load_stage(results_dir: str | Path, stage: str) -> pc.PlantedTable:
    """The stage ``stage`` of ``results_dir / HISTORY_FILE`` as a ``PlantedTable`` (``current`` False); an
    unknown stage, a missing file or a stage the file lacks is refused, saying what to do."""
    import pandas as pd

    _check_known(stage)
    path = Path(results_dir) / HISTORY_FILE
    record = _read(path).get(stage)
    if record is None:
        raise InvalidInputError(
            f"{path} has no stage {stage!r}: restore the file from the repository (git checkout -- {path}), or "
            "keep the stage with keep_stage."
        )
    return pc.PlantedTable(
        table=pc.confusion(record["records"]),
        provenance=record["provenance"],
        current=False,
        records=pd.DataFrame(record["records"]),
    )


def keep_stage(results_dir: str | Path, stage: str, families: Iterable[str], source: Path = pc.FILE) -> Path:
    """Add the record ``results_dir / source`` (the current record by default) to the history as ``stage`` (a name
    of ``STAGES``), its records only of ``families``, and write the history atomically; a stage already kept or a
    family the record lacks is refused. Returns the history's path."""
    _check_known(stage)
    path, kept = Path(results_dir) / HISTORY_FILE, Path(results_dir) / source
    stages = _read(path) if path.is_file() else {}
    if stage in stages:
        raise InvalidInputError(f"{path} already keeps {stage!r}: a stage is history, never rewritten.")
    if not kept.is_file():
        raise InvalidInputError(f"{kept} does not exist: there is no record to keep as {stage!r}.")
    record = json.loads(kept.read_text(encoding="utf-8"))
    wanted = list(dict.fromkeys(families))
    missing = [f for f in wanted if f not in {r["family"] for r in record["records"]}]
    if not wanted or missing:
        raise InvalidInputError(
            f"{kept} has no records of {missing or 'no family'}: name the families the appendix reads of it."
        )
    stages[stage] = {
        "provenance": record["provenance"],
        "records": [r for r in record["records"] if r["family"] in wanted],
        "note": STAGES[stage],
    }
    text = json.dumps({"stages": stages}, indent=0) + "\n"  # kept in the order they were added
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _check_known(stage: str) -> None:
    if stage not in STAGES:
        raise InvalidInputError(f"Unknown stage {stage!r}: the stages are {', '.join(map(repr, STAGES))}.")


def _read(path: Path) -> dict[str, dict]:
    """The stages kept in the history ``path``; a missing file is refused (it is history: restore it)."""
    if not path.is_file():
        raise InvalidInputError(
            f"{path} does not exist: it is committed with the repository, so restore it (git checkout -- {path}); "
            "earlier stages cannot be computed again."
        )
    return json.loads(path.read_text(encoding="utf-8"))["stages"]
