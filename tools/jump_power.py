"""Measure the power of the jump judge (``analysis.jump_power.power_table``) and keep the table in
``results/calibration/jump_power.json`` with its provenance, for the criteria appendix of chapter 8 to show::

    .venv/bin/python tools/jump_power.py                 # 20 cases per cell, 90 cells (about 12 min on one core)
    .venv/bin/python tools/jump_power.py --n-cases 2 --out /tmp/smoke.json

Rerun it whenever the planting, the transition fit or a jump judge changes: the file records
``jump_power.source_hash()`` of the code it ran on, and the appendix says so when the code has changed since.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from provenance import fresh_value, run_provenance

from latentbook._files import atomic_write
from latentbook.analysis import jump_power

ROOT = Path(__file__).resolve().parents[1]
FRESH_HASH = "from latentbook.analysis import jump_power; print(jump_power.source_hash())"
OUT = ROOT / "results" / "calibration" / "jump_power.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-cases", type=int, default=20, help="planted cases per cell (default: 20)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the planted cases (default: 0)")
    parser.add_argument(
        "--out", type=Path, default=OUT, help=f"where to write (default: {OUT.relative_to(ROOT)})"
    )
    args = parser.parse_args()
    start = time.perf_counter()
    source_hash = jump_power.source_hash()  # of the code just imported: the code that runs
    table = jump_power.power_table(n_cases=args.n_cases, seed=args.seed)
    if fresh_value(FRESH_HASH) != source_hash:
        raise SystemExit("The code changed while the table ran: nothing written; run it again.")
    provenance = run_provenance(
        source_hash, args.n_cases, args.seed, time.perf_counter() - start, d=jump_power.D
    )
    record = {"provenance": provenance, "table": table.to_dict(orient="records")}
    text = json.dumps(record, indent=1) + "\n"
    atomic_write(args.out, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    print(table.to_string(index=False))
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
