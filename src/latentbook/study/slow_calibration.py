"""The slow calibration families as the book shows them: read from ``results/calibration/``, with whether the
code they ran on is still the code of the package (``analysis.calibration.source_hash``).

``tools/calibrate_slow.py`` writes the file; the criteria appendix of chapter 8 calls ``slow_families()``
(a ``table_record.TableRecord`` with the summary it glues).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..analysis import calibration
from .table_record import TableRecord, load_table_record

SLOW_FILE = Path("calibration") / "slow_families.json"


@dataclass(frozen=True)
class SlowFamilies(TableRecord):
    """The confusion table of the slow families, its provenance, and ``current``: the code is unchanged since."""

    def summary(self) -> dict[str, object]:
        """What chapter 8 says of them: ``n`` cases per family, the lowest rate of "holds" where a claim was
        planted (``found``) and the highest where none was (``false``), whether the spike judge meets both
        targets (``outcome``, in words), whether the code is unchanged (``current``) and the date, and the planted
        samples' shape (``calibration.SPIKE_SHAPE``, ``SPIKE_RHO``, ``SPIKE_STRENGTH`` to twice it)."""
        _, n_prompts, per_prompt, width = calibration.SPIKE_SHAPE
        planted = self.table["planted"]
        return {
            "n": int(self.provenance["n_cases"]),
            "found": float(self.table.loc[planted == "present", "holds"].min()),
            "false": float(self.table.loc[planted == "absent", "holds"].max()),
            "outcome": "both targets are met, so a spike row above reads like any other"
            if calibration.meets_targets(self.table)["mp_spikes"]
            else "a target is missed, so the spike rows above are not evidence either way",
            "current": "the current code"
            if self.current
            else "code that has changed since: rerun tools/calibrate_slow.py",
            "date": str(self.provenance["date"])[:10],
            "per_prompt": per_prompt,
            "prompts": n_prompts,
            "width": width,
            "rho_low": calibration.SPIKE_RHO[0],
            "rho_high": calibration.SPIKE_RHO[1],
            "strength_low": calibration.SPIKE_STRENGTH,
            "strength_high": 2 * calibration.SPIKE_STRENGTH,
        }


def slow_families(results_dir: str | Path) -> SlowFamilies:
    """``results_dir / calibration / slow_families.json`` as a table (the columns of ``calibration.calibrate_statistics``)."""
    record = load_table_record(results_dir, SLOW_FILE, calibration.source_hash(), "calibrate_slow.py")
    return SlowFamilies(record.table, record.provenance, record.current)
