"""The jump judge's power confirmed on planted models: codes written over one to three layers of 30 and 64, captured
and judged as the verdict table judges a model and its twin.

The power table (``analysis.jump_power``) is measured on synthetic ``m_z`` profiles. Here each case is a real Llama
model (``models.planted_spread``): a sparse code (``planted`` ``sparse_code``, strength drawn in ``STRENGTH`` as the
end-to-end families draw it) written at ``GAMMA`` over ``WIDTHS`` layers, and the same model with nothing planted
(width 0 in the table), each against one random twin (``planted.twin_spec``), at width ``D`` and the end-to-end
``planted_calibration.CAPTURE`` settings. Every model goes through the book's ``capture`` -> ``measure`` ->
``rows.claim_rows``, and each jump row (``evidence.JUMP_CLAIMS``) is kept twice: the judge's own verdict
(``judged``) and the verdict after ``evidence.with_power`` (``verdict.weigh_jump``: ``weighed``).

Usage: ``confirmation_table(n_cases, seed)`` (one record per case, depth, width and row; ``tools/confirm_power.py``
keeps it in ``results/calibration/power_confirmation.json``), ``load_confirmation(results_dir)`` and
``counts(record.table)``: per depth, width and row, the counts of "holds", weighed "does not hold" and
"inconclusive", with the Wilson 95 % interval of the first two rates.
Introduced in: the criteria appendix (the power of the jump judge).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .._code_hash import digest, module_hashes
from ..analysis import verdict
from ..models import planted, planted_spread
from . import evidence, planted_calibration
from .table_record import TableRecord, load_table_record

if TYPE_CHECKING:
    import pandas as pd

    from .measure import Measurements

LAYERS = (30, 64)
WIDTHS = (1, 2, 3)  # layers the code is written over, ending at depth round(GAMMA L); 0 in the table: nothing
GAMMA = 0.42
D = min(planted_calibration.WIDTHS)  # the narrowest stream the end-to-end calibration uses
STRENGTH = (2.0, 4.0)  # the end-to-end code families' strengths (planted_calibration._code)
FILE = Path("calibration") / "power_confirmation.json"
SCRIPT = "confirm_power.py"


def measure_spread(spec: planted_spread.SpreadSpec) -> Measurements:
    """Build, capture and measure one model as ``planted_calibration.measure_spec`` does (``CAPTURE``, the Omega rows
    only: no spectra, no spikes)."""
    from ..capturing.capture import capture
    from ..prompts import load
    from .measure import measure

    model = planted_spread.build(spec)
    texts = load("general", limit=planted_calibration.CAPTURE["n_prompts"])
    settings = {k: planted_calibration.CAPTURE[k] for k in ("max_length", "batch_size")}
    return measure(capture(model, texts, progress=False, **settings), spec.name, spectra=False, spikes=False)


def case_specs(case: int, seed: int, n_layers: int) -> dict[int, planted_spread.SpreadSpec]:
    """Case ``case``'s models of ``n_layers`` layers by width (0: nothing planted), one strength drawn from
    ``(seed, case)`` for every width and depth."""
    rng = np.random.default_rng([seed, case])
    base = planted.PlantSpec(
        plant="sparse_code",
        gamma=GAMMA,
        n_layers=n_layers,
        d=D,
        seed=1000 * seed + case,
        strength=float(rng.uniform(*STRENGTH)),
    )
    specs = {0: planted_spread.SpreadSpec(replace(base, plant="none"))}
    specs.update({width: planted_spread.SpreadSpec(base, width) for width in WIDTHS})
    return specs


def run_case(case: int, seed: int = 0, layers: tuple[int, ...] = LAYERS) -> list[dict]:
    """Every model of case ``case`` at every depth of ``layers``, judged against the case's twin: one record per
    model and jump row (``judged``, ``weighed`` and the weighed reason)."""
    from .rows import claim_rows

    records = []
    for n_layers in layers:
        specs = case_specs(case, seed, n_layers)
        twin = measure_spread(planted_spread.SpreadSpec(planted.twin_spec(specs[1].base)))
        for width, spec in specs.items():
            m = measure_spread(spec)
            for row in claim_rows(m, twin, run="planted"):
                if row.claim not in evidence.JUMP_CLAIMS:
                    continue
                weighed = evidence.with_power(row, m, twin)
                records.append(
                    {
                        "case": case,
                        "n_layers": n_layers,
                        "width": width,
                        "strength": spec.base.strength,
                        "model": spec.name,
                        "claim": row.claim,
                        "value": row.value,
                        "judged": row.verdict,
                        "weighed": weighed.verdict,
                        "reason": weighed.reason,
                    }
                )
    return records


def confirmation_table(n_cases: int, seed: int = 0) -> pd.DataFrame:
    """``run_case`` of cases ``0 .. n_cases - 1``, one thread (a long run beside other work), as one table."""
    import pandas as pd
    import torch

    torch.set_num_threads(1)
    return pd.DataFrame([record for case in range(n_cases) for record in run_case(case, seed)])


def counts(table: pd.DataFrame) -> pd.DataFrame:
    """Per ``n_layers``, ``width`` and ``claim`` of a confirmation ``table``: ``n``; ``holds``; the judge's own and
    the weighed "does not hold" (``absent``, ``absent_weighed``); the weighed ``inconclusive``; and the Wilson 95 %
    interval of the rate of "holds" (``holds_low``, ``holds_high``) and of weighed "does not hold"
    (``absent_low``, ``absent_high``)."""
    import pandas as pd

    rows = []
    for (n_layers, width, claim), group in table.groupby(["n_layers", "width", "claim"], sort=True):
        n = len(group)
        found = int((group["judged"] == "holds").sum())
        absent = int((group["weighed"] == "does not hold").sum())
        rows.append(
            {
                "n_layers": int(n_layers),
                "width": int(width),
                "claim": claim,
                "n": n,
                "holds": found,
                "absent": int((group["judged"] == "does not hold").sum()),
                "absent_weighed": absent,
                "inconclusive": int((group["weighed"] == "inconclusive").sum()),
                **dict(zip(("holds_low", "holds_high"), verdict.wilson_interval(found / n, n))),
                **dict(zip(("absent_low", "absent_high"), verdict.wilson_interval(absent / n, n))),
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


@dataclass(frozen=True)
class Confirmation(TableRecord):
    """The confirmation records (``confirmation_table``'s columns), their provenance and ``current``."""

    def counts(self) -> pd.DataFrame:
        return counts(self.table)

    def summary(self, power: pd.DataFrame) -> dict[str, object]:
        """``summary`` of this record beside the synthetic power table ``power``."""
        return summary(self.table, power, self.provenance, self.current)


def load_confirmation(results_dir: str | Path) -> Confirmation:
    """``results_dir / calibration / power_confirmation.json`` as a ``Confirmation``; a missing file is refused,
    naming the script that makes it."""
    record = load_table_record(results_dir, FILE, source_hash(), SCRIPT)
    return Confirmation(record.table, record.provenance, record.current)


def summary(table: pd.DataFrame, power: pd.DataFrame, provenance: dict, current: bool) -> dict[str, object]:
    """What the criteria appendix glues (``conf_*``) of a confirmation ``table`` beside the synthetic ``power`` table
    (``jump_power.power_table``'s columns): cases a cell, the date, whether current; over the planted cells (width
    1 or more) the lowest rate of "holds" (``found_min``), the judge's own and the weighed "does not hold"
    (``absent``, ``absent_weighed``) and their cases (``planted_n``); the same at two layers of 30 (``two_of_30_*``);
    on the models with nothing planted the rate of weighed "does not hold" and the count of "holds"; the planted
    ``omega_jump`` in units of the bar ``verdict.min_jump(D)`` (``bar_low``, ``bar_high``); and in the synthetic
    table at the paper's jump (``power_record.PAPER_AMPLITUDE``), over the same depths and rises of up to the widest
    planted width, the lowest rate of "holds" and the highest weighed rate of "does not hold"."""
    from .power_record import PAPER_AMPLITUDE

    cells = counts(table)
    planted_cells = cells[cells["width"] > 0]
    control = cells[cells["width"] == 0]
    two = cells[(cells["n_layers"] == 30) & (cells["width"] == 2)]
    jumps = table[(table["claim"] == "omega_jump") & (table["width"] > 0)]["value"] / verdict.min_jump(D)
    synthetic = power[
        (power["amplitude"] == PAPER_AMPLITUDE)
        & power["n_layers"].isin(LAYERS)
        & (power["layers_wide"] <= max(WIDTHS))
    ]
    return {
        "conf_n": int(provenance["n_cases"]),
        "conf_date": str(provenance["date"])[:10],
        "conf_current": "the current code"
        if current
        else f"code that has changed since: rerun tools/{SCRIPT}",
        "conf_layers": " and ".join(str(n) for n in LAYERS),
        "conf_widths": ", ".join(str(w) for w in WIDTHS),
        "conf_gamma": GAMMA,
        "conf_d": D,
        "conf_strength_low": STRENGTH[0],
        "conf_strength_high": STRENGTH[1],
        "conf_found_min": float((planted_cells["holds"] / planted_cells["n"]).min()),
        "conf_planted_n": int(planted_cells["n"].sum()),
        "conf_absent": int(planted_cells["absent"].sum()),
        "conf_absent_weighed": int(planted_cells["absent_weighed"].sum()),
        "conf_inconclusive": int(planted_cells["inconclusive"].sum()),
        "conf_two_of_30_n": int(two["n"].sum()),
        "conf_two_of_30_holds": int(two["holds"].sum()),
        "conf_two_of_30_absent_weighed": int(two["absent_weighed"].sum()),
        "conf_control_n": int(control["n"].sum()),
        "conf_control_holds": int(control["holds"].sum()),
        "conf_control_absent_weighed": float(control["absent_weighed"].sum() / control["n"].sum()),
        "conf_bar_low": float(jumps.min()),
        "conf_bar_high": float(jumps.max()),
        "conf_synthetic_found_min": float(synthetic["found"].min()),
        "conf_synthetic_absent_weighed_max": float(synthetic["absent_weighed"].max()),
        "conf_synthetic_max_wide": int(synthetic["layers_wide"].max()),
    }
