"""Confirm the jump judge's power on planted models (``study.power_confirmation.confirmation_table``: codes written
over one to three layers of 30 and 64, and nothing planted, each against its random twin) and keep the records in
``results/calibration/power_confirmation.json`` with their provenance, for the criteria appendix to show::

    nice -n 10 .venv/bin/python tools/confirm_power.py     # 6 cases (about 15 min on one core)
    .venv/bin/python tools/confirm_power.py --n-cases 1 --out /tmp/smoke.json

Rerun it whenever the spread plant, the end-to-end calibration's code (``planted_calibration.source_hash``) or the
weighing of the jump rows changes: the file records ``power_confirmation.source_hash()`` of the code it ran on,
and the appendix says so when the code has changed since.
"""

from __future__ import annotations

from provenance import ROOT, table_main

from latentbook.study import power_confirmation

if __name__ == "__main__":
    table_main(
        __doc__,
        power_confirmation.SCRIPT,
        ROOT / "results" / power_confirmation.FILE,
        6,
        power_confirmation.__name__,
        lambda n_cases, seed: power_confirmation.confirmation_table(n_cases=n_cases, seed=seed),
        layers=list(power_confirmation.LAYERS),
        widths=list(power_confirmation.WIDTHS),
        gamma=power_confirmation.GAMMA,
        d=power_confirmation.D,
        strength=list(power_confirmation.STRENGTH),
    )
