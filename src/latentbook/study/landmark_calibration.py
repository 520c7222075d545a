"""The landmark row's judge calibrated on planted captures: token vectors with an Omega jump, a
massive-activation onset and a logit-lens convergence planted at known depths, built by the capture's own
accumulators (``synthetic.as_capture``) and read by the same ``study.run_landmarks.depth_landmarks`` and
``analysis.verdict.judge_landmark`` as a model's capture.

Families (``FAMILIES``): the landmarks at the planted jump ("near": the judge should say holds), far from it
("far": it must not), and no jump at all with a landmark at 0.42 ("no jump": nothing to place, never holds); and
for the massive-step row (``verdict.judge_massive_step``, ``Family.claim``): a massive coordinate in every token
from 0.42, alone or with a code at the same depth (raw m's step is the massive onset: holds), and a code at 0.42
with no massive coordinate or with a massive sink from 0.83 (raw m's step is the code's: never holds).
The intrinsic dimension rises with depth in every family, so its peak is at an end and no landmark.
``tools/calibrate_landmarks.py`` runs ``calibrate`` and keeps the records in ``results/`` (``FILE``) with
their provenance; ``load_record`` reads them back with ``confusion``'s table. The 5 % target for false holds needs at least 59 cases per absent
family (0 in 59 has a Wilson 95 % upper bound of 6.1 %, 0 in 73 of 5.0 %). Introduced in: chapter 9.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .._code_hash import digest, module_hashes
from ..analysis.resampling import wilson_interval
from ..analysis.synthetic import as_capture, curved_manifold
from ..errors import InvalidInputError
from .cases import in_case_order, run_cases
from .planted_calibration import PlantedTable
from .run_landmarks import Lens, depth_landmarks

FILE = "calibration/landmarks.json"
N_BOOT = 100  # prompt draws of each landmark's interval in a calibration case

N_DEPTHS = 13  # depths 0..12: enough for the transition fit (11 needed)
N_PROMPTS, PER_PROMPT, WIDTH = 100, 5, 96
CODE_SIZE, CODE_STRENGTH = 4, 8.0  # a token-specific sparse code: 4 coordinates at 8 typical coordinate sizes
TARGET_POWER, TARGET_FALSE = 0.8, 0.05


@dataclass(frozen=True)
class Family:
    """Where the Omega jump (None: none planted), the massive onset (None: none) and the lens convergence lie, as
    depths; the row it calibrates (``claim``) and whether the massive coordinate is in every token or in the sink."""

    name: str
    jump: int | None
    onset: int | None
    lens: int
    expect: str  # "holds" or "not holds"
    claim: str = "landmark_coincidence"
    every_token: bool = False


FAMILIES = (
    Family("near: onset and lens at the jump", 5, 5, 5, "holds"),
    Family("far: onset and lens away from the jump", 5, 10, 11, "not holds"),
    Family("no jump, onset at 0.42", None, 5, 9, "not holds"),
    # the massive-step row: is raw m's largest step the massive onset? (a massive coordinate in every token moves
    # raw m by itself; a code moves it as much as an object would)
    Family("massive in every token at 0.42", None, 5, 9, "holds", "massive_step", True),
    Family("a code and massive in every token, both at 0.42", 5, 5, 9, "holds", "massive_step", True),
    Family("a code at 0.42, no massive coordinate", 5, None, 9, "not holds", "massive_step"),
    Family("a code at 0.42, a massive sink at 0.83", 5, 10, 9, "not holds", "massive_step"),
)


def planted_case(family: Family, seed: int) -> tuple:
    """The capture and logit lens of one case of ``family``: prompt-correlated tokens on a curved manifold whose
    dimension grows with depth, a sink at position 0, and the planted landmarks."""
    rng = np.random.default_rng(seed)
    n = N_PROMPTS * PER_PROMPT
    code = np.zeros((n, WIDTH))
    np.put_along_axis(code, np.argsort(rng.random((n, WIDTH)), axis=1)[:, :CODE_SIZE], CODE_STRENGTH, axis=1)
    sink = np.arange(n) % PER_PROMPT == 0
    states = []
    for depth in range(N_DEPTHS):
        cloud = curved_manifold(
            N_PROMPTS, PER_PROMPT, 3 + depth // 2, WIDTH, rho=0.3, noise=0.05, seed=seed + depth
        )
        cloud = cloud.x / cloud.x.std()
        if family.jump is not None and depth >= family.jump:
            cloud = cloud + code
        if family.onset is not None and depth >= family.onset:
            cloud[slice(None) if family.every_token else sink, 0] = 3000.0
        states.append(cloud)
    positions = np.tile(np.arange(PER_PROMPT), N_PROMPTS)
    prompts = np.repeat(np.arange(N_PROMPTS), PER_PROMPT)
    cap = as_capture(np.stack(states), prompts, positions, name=f"planted:{family.name}", n_vectors=n)
    keep = cap.vectors.positions > 0
    kl = np.maximum(family.lens - np.arange(N_DEPTHS), 0)[:, None] * (
        1 + 0.2 * rng.random((1, int(keep.sum())))
    )
    kl = kl + 0.01 * rng.random(kl.shape)
    kl[-1] = 0.0
    return cap, Lens(kl, cap.vectors.prompt_ids[keep])


def run_case(case: int, seed: int = 0) -> list[dict]:
    """The verdict of its row (``Family.claim``) on case ``case`` of every family, one record each."""
    records = []
    for family in FAMILIES:
        cap, lens = planted_case(family, seed * 100_000 + case)
        found = depth_landmarks(cap, lens=lens, n_boot=N_BOOT, seed=case)
        verdict, reason = (
            found.verdict() if family.claim == "landmark_coincidence" else found.massive_step_verdict()
        )
        records.append(
            {"family": family.name, "claim": family.claim, "case": case, "verdict": verdict, "reason": reason}
        )
    return records


def calibrate(n_cases: int, seed: int = 0, jobs: int = 1) -> list[dict]:
    """The records of ``n_cases`` cases of every family, over ``jobs`` processes."""
    if not isinstance(n_cases, (int, np.integer)) or n_cases < 1:
        raise InvalidInputError(f"n_cases must be a positive integer, got {n_cases!r}.")
    return in_case_order(iter_cases(range(n_cases), seed, jobs))


def iter_cases(cases: Iterable[int], seed: int = 0, jobs: int = 1) -> Iterator[tuple[int, list[dict]]]:
    """``(case, run_case(case, seed))`` as each case finishes (``cases.run_cases``)."""
    return run_cases(run_case, cases, seed, jobs)


def confusion(records: list[dict]) -> pd.DataFrame:
    """One row per family: the verdict counts, the rate of "holds" (power for "near", false holds for the
    others) with its Wilson interval, and whether it meets its target (power at least ``TARGET_POWER``; the
    upper end of the false-hold interval at most ``TARGET_FALSE``)."""
    table = pd.DataFrame(records)
    rows = []
    for family in FAMILIES:
        verdicts = table.loc[table["family"] == family.name, "verdict"].tolist()
        n, holds = len(verdicts), verdicts.count("holds")
        low, high = wilson_interval(holds / n, n)
        meets = holds / n >= TARGET_POWER if family.expect == "holds" else high <= TARGET_FALSE
        rows.append(
            {
                "claim": family.claim,
                "family": family.name,
                "expected": family.expect,
                "cases": n,
                "holds": holds,
                "does not hold": verdicts.count("does not hold"),
                "inconclusive": verdicts.count("inconclusive"),
                "not testable": verdicts.count("not testable here"),
                "holds rate": holds / n,
                "Wilson low": low,
                "Wilson high": high,
                "meets target": bool(meets),
            }
        )
    return pd.DataFrame(rows)


def source_hash() -> str:
    """``_code_hash.digest`` of ``code_hashes()``: a record in ``results/calibration/`` is current while this matches
    the one it keeps."""
    return digest(code_hashes())


def code_hashes() -> dict[str, str]:
    """The hash of each module this module imports, itself included (``_code_hash.module_hashes``): what a record
    of it keeps of the code that made it, so that a change is named module by module."""
    return module_hashes(__name__)


def load_record(results_dir: str | Path) -> PlantedTable:
    """``results_dir / calibration / landmarks.json`` (written by ``tools/calibrate_landmarks.py``)."""
    path = Path(results_dir) / FILE
    if not path.is_file():
        raise InvalidInputError(
            f"{path} does not exist: run `python tools/calibrate_landmarks.py` to make it."
        )
    record = json.loads(path.read_text(encoding="utf-8"))
    return PlantedTable(
        table=confusion(record["records"]),
        provenance=record["provenance"],
        current=record["provenance"].get("source_hash") == source_hash(),
    )
