"""Chapter 9's landmarks of depth on chapter 7's trained ladder, where capability varies at a known size.

``rung_landmarks(loaded, spec)`` captures a ladder model on held-out task sequences exactly as
``ladder.diagnostics.measure_model`` does (``ladder.diagnostics.task_capture``) and reads every landmark of
``study.run_landmarks.depth_landmarks``, the logit lens included (ladder models are causal LMs). ``measure_landmarks``
does it for every trained rung and its untrained null and writes ``landmarks.json`` beside the ladder's
``measurements.json`` (each model with the sha256 of its weights, the record with ``landmarks_hash()`` of the
code that read them: ``is_current``); ``load_record`` reads it and ``landmark_counts`` says, per architecture, in how many
seeds each landmark is found, trained and untrained, and where.

The ladder's models have 1 to 8 layers, so their depth axis has 2 to 9 points: an interior peak needs three, and
the Omega fit ``transition.MIN_FITTED`` after the edge depths, which no rung reaches. What the table shows on these
models is therefore how far the landmarks can be read at all, not where they fall.
Introduced in: chapter 7 ("Other clocks of depth on the ladder").
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .._files import atomic_write
from ..errors import InvalidInputError
from ..ladder.store import INIT_SUFFIX, ladder_dir, trained_rungs, training_log
from . import run_landmarks

if TYPE_CHECKING:
    import pandas as pd

    from ..ladder.task import TaskSpec
    from ..models import LoadedModel

FILE = "landmarks.json"
COMMAND = ".venv/bin/python tools/ladder_landmarks.py"
SHOWN = run_landmarks.LANDMARK_NAMES  # the columns of landmark_counts, in chapter 9's order

# Every module of the package whose code runs when a ladder model's landmarks are read (``rung_landmarks``;
# tests/test_ladder_landmarks.py traces it on a ten-layer model and checks that none is missing).
MEASURING_MODULES = (
    "latentbook._files",
    "latentbook.analysis.confounds",
    "latentbook.analysis.intrinsic_dimension",
    "latentbook.analysis.landmarks",
    "latentbook.analysis.omega",
    "latentbook.analysis.omega_profiles",
    "latentbook.analysis.resampling",
    "latentbook.analysis.standardisation",
    "latentbook.analysis.synthetic",
    "latentbook.analysis.transition",
    "latentbook.analysis.verdict",
    "latentbook.capturing.accumulators",
    "latentbook.capturing.capture",
    "latentbook.capturing.hooks",
    "latentbook.capturing.lens",
    "latentbook.capturing.results",
    "latentbook.capturing.settings",
    "latentbook.ladder",
    "latentbook.ladder.diagnostics",
    "latentbook.ladder.folders",
    "latentbook.ladder.store",
    "latentbook.ladder.task",
    "latentbook.models.anatomy",
    "latentbook.models.weights",
    "latentbook.models.zoo",
    "latentbook.study.ladder_landmarks",
    "latentbook.study.run_landmarks",
)


def landmarks_hash() -> str:
    """``_code_hash.modules_hash`` of ``MEASURING_MODULES``: a record was read by the current code while its
    ``"measured_by"`` equals this (``is_current``)."""
    from .._code_hash import modules_hash

    return modules_hash(MEASURING_MODULES)


def is_current(record: dict) -> bool:
    """Whether the code that wrote ``record`` is the current code (a record from before the hash was kept is not)."""
    return record.get("measured_by") == landmarks_hash()


def written_by(record: dict) -> str:
    """Who read ``record``'s landmarks, as a clause for chapter 7: the current code, or older code and the command
    that reads them again."""
    if is_current(record):
        return "by the code that builds this page"
    return f"by older code than the code that builds this page, so they may differ from what it gives: `{COMMAND}` reads them again"


def rung_landmarks(loaded: LoadedModel, spec: TaskSpec, n_boot: int = run_landmarks.N_BOOT) -> dict:
    """The landmarks of one ladder model: its depths, and one row per landmark (``DepthLandmarks.table``)."""
    from ..ladder.diagnostics import task_capture

    cap = task_capture(loaded, spec)
    found = run_landmarks.depth_landmarks(
        cap, loaded.name, lens=run_landmarks.lens_of(cap, loaded), n_boot=n_boot
    )
    rows = [{k: v for k, v in row.items() if k != "run"} for row in found.table()]
    return {"model": loaded.name, "sha256": loaded.sha, "n_depths": cap.n_depths, "landmarks": rows}


def measure_landmarks(out: str | Path | None = None, rungs: list[str] | None = None) -> Path:
    """``rung_landmarks`` of every trained rung (``ladder.store.trained_rungs``) and its untrained null, written
    atomically to ``out`` (default: ``landmarks.json`` in the ladder's folder) with the hash of the code that read
    them, the date and the time taken."""
    from ..ladder.task import TaskSpec
    from ..models import load_model

    root = ladder_dir()
    rungs = rungs or trained_rungs(root)
    if not rungs:
        raise InvalidInputError(
            f"No trained rung in {root}: train the ladder first (latentbook train-ladder)."
        )
    path = Path(out) if out is not None else root / FILE
    _refuse_foreign(path)
    start = time.perf_counter()
    models = {}
    for rung in rungs:
        spec = TaskSpec(**training_log(rung)["spec"])
        models[rung] = {
            kind: rung_landmarks(load_model(f"ladder:{rung}{suffix}", device="cpu"), spec)
            for kind, suffix in (("trained", ""), ("null", INIT_SUFFIX))
        }
    record = {
        "command": COMMAND,
        "measured_by": landmarks_hash(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seconds": round(time.perf_counter() - start, 1),
        "models": models,
    }
    return atomic_write(path, lambda tmp: tmp.write_text(json.dumps(record, indent=1) + "\n"))


def _refuse_foreign(path: Path) -> None:
    """Refuse, before any model loads, an existing ``path`` that is not a record ``measure_landmarks`` wrote."""
    if not path.exists():
        return
    try:
        ours = json.loads(path.read_text()).get("command") == COMMAND
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        ours = False
    if not ours:
        raise InvalidInputError(f"{path} exists and is not a ladder landmarks record: choose another --out.")


def load_record(path: str | Path | None = None) -> dict:
    """The record ``measure_landmarks`` wrote (default: the ladder folder's ``landmarks.json``)."""
    path = Path(path) if path is not None else ladder_dir() / FILE
    if not path.is_file():
        raise InvalidInputError(f"No ladder landmarks at {path}: run `{COMMAND}` to measure them.")
    return json.loads(path.read_text())


def landmark_rows(record: dict) -> pd.DataFrame:
    """One row per model, kind (trained or untrained) and landmark, with its architecture (the rung less its seed)."""
    import pandas as pd

    rows = []
    for rung, kinds in record["models"].items():
        for kind, entry in kinds.items():
            for row in entry["landmarks"]:
                rows.append(
                    {
                        "architecture": rung.rsplit("-s", 1)[0],
                        "rung": rung,
                        "kind": "trained" if kind == "trained" else "untrained",
                        "depths": entry["n_depths"],
                        **row,
                    }
                )
    return pd.DataFrame(rows)


def landmark_counts(rows: pd.DataFrame) -> pd.DataFrame:
    """Per architecture and kind: the depths, and for each landmark ``k of n`` seeds where it is found (with the
    median gamma of those, when any)."""

    def cell(group: pd.DataFrame) -> str:
        found = group[group["found"]]
        where = f" at {found['gamma'].median():.2f}" if len(found) else ""
        return f"{len(found)} of {len(group)}{where}"

    table = (
        rows.groupby(["architecture", "kind", "depths", "landmark"], sort=False)
        .apply(cell, include_groups=False)
        .unstack("landmark")
    )
    return table[[name for name in SHOWN if name in table.columns]]
