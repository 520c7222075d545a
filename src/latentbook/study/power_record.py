"""The power table of the jump judge as the book shows it: read from ``results/calibration/jump_power.json``
(``tools/jump_power.py`` writes it), with whether the code it ran on is still the package's
(``analysis.jump_power.source_hash``).

Usage: ``power = load_power_record(results_dir)``; ``power.table`` (one row per cell, the columns of
``jump_power.power_table``), ``power.summary()`` (what the criteria appendix of chapter 8 says of it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..analysis import jump_power, transition, verdict
from .table_record import TableRecord, load_table_record

POWER_FILE = Path("calibration") / "jump_power.json"
PAPER_AMPLITUDE = 2.0  # the paper's jump, in units of the judge's bar (half of it)
# a rise over at most a tenth of the depth is a jump; over a quarter or more, a slope
NARROW, WIDE = 0.1, 0.25


@dataclass(frozen=True)
class PowerRecord(TableRecord):
    """The power table (``jump_power.power_table``'s columns), its provenance and ``current``."""

    def summary(self) -> dict[str, object]:
        """The numbers the appendix glues (``power_*``): cases a cell, the date, whether current; at the paper's jump
        the lowest rate of "holds" on steps (``paper_step``) and on the widest spread (``paper_wide``), the judge's own
        and the weighed rate of "does not hold" (``absent_paper``, ``absent_weighed_paper``), the largest weighed rate
        where the rise takes at most ``NARROW`` of the depth and where it takes ``WIDE`` or more (``narrow_kept``,
        ``wide_kept``); the mean rate of "holds" at the bar itself (``at_bar``); where nothing is planted, the share
        of the judge's "does not hold" the weighing keeps (``flat_kept``); ``transition.MAX_WIDTH``."""
        t = self.table
        paper = t[t["amplitude"] == PAPER_AMPLITUDE]
        flat = t[t["amplitude"] == 0.0]
        widest = int(t["layers_wide"].max())
        spread = paper["layers_wide"] / paper["n_layers"]  # the share of the depth the rise takes
        return {
            "power_n": int(self.provenance["n_cases"]),
            "power_date": str(self.provenance["date"])[:10],
            "power_current": "the current code"
            if self.current
            else "code that has changed since: rerun tools/jump_power.py",
            "power_paper_step": float(paper.loc[paper["layers_wide"] == 0, "found"].min()),
            "power_paper_wide": float(paper.loc[paper["layers_wide"] == widest, "found"].min()),
            "power_wide_layers": widest,
            "power_absent_paper": float(paper["absent"].mean()),
            "power_absent_weighed_paper": float(paper["absent_weighed"].mean()),
            "power_flat_kept": float(flat["absent_weighed"].sum() / flat["absent"].sum())
            if flat["absent"].sum()
            else float("nan"),
            "power_at_bar": float(t.loc[t["amplitude"] == 1.0, "found"].mean()),
            "power_narrow_kept": float(paper.loc[spread <= NARROW, "absent_weighed"].max()),
            "power_wide_kept": float(paper.loc[spread >= WIDE, "absent_weighed"].max()),
            "power_narrow": NARROW,
            "power_wide": WIDE,
            "power_max_width": transition.MAX_WIDTH,
            "power_min_power": verdict.MIN_POWER,
        }


def load_power_record(results_dir: str | Path) -> PowerRecord:
    """``results_dir / calibration / jump_power.json`` as a ``PowerRecord``; a missing file is refused, naming the
    script that makes it."""
    record = load_table_record(results_dir, POWER_FILE, jump_power.source_hash(), "jump_power.py")
    return PowerRecord(record.table, record.provenance, record.current)
