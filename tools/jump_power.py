"""Measure the power of the jump judge (``analysis.jump_power.power_table``) and keep the table in
``results/calibration/jump_power.json`` with its provenance, for the criteria appendix of chapter 8 to show::

    .venv/bin/python tools/jump_power.py                 # 20 cases per cell, 90 cells (about 12 min on one core)
    .venv/bin/python tools/jump_power.py --n-cases 2 --out /tmp/smoke.json

Rerun it whenever the planting, the transition fit or a jump judge changes: the file records
``jump_power.source_hash()`` of the code it ran on, and the appendix says so when the code has changed since.
"""

from __future__ import annotations

from provenance import ROOT, table_main

from latentbook.analysis import jump_power

if __name__ == "__main__":
    table_main(
        __doc__,
        "jump_power.py",
        ROOT / "results" / "calibration" / "jump_power.json",
        20,
        jump_power.__name__,
        lambda n_cases, seed: jump_power.power_table(n_cases=n_cases, seed=seed),
        d=jump_power.D,
    )
