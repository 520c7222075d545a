"""Calibrate the slow families (``calibration.StatisticFamily.slow``: the spike counts, each case refitting the
Marchenko-Pastur law some 150 times) and keep the table in ``results/calibration/slow_families.json`` with its
provenance, for chapter 8 to show beside the families it calibrates as it builds::

    .venv/bin/python tools/calibrate_slow.py                # 10 cases per family (about 20 min on 2 cores)
    .venv/bin/python tools/calibrate_slow.py --n-cases 2    # a smoke test, written to --out

Rerun it whenever an estimator of those claims changes: the file records ``calibration.slow_source_hash()``
of the code it ran on, and chapter 8 says so when the code has changed since.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from provenance import fresh_value, run_provenance

from latentbook._files import atomic_write
from latentbook.analysis import calibration

ROOT = Path(__file__).resolve().parents[1]
FRESH_HASH = "from latentbook.analysis import calibration; print(calibration.slow_source_hash())"
OUT = ROOT / "results" / "calibration" / "slow_families.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-cases", type=int, default=10, help="planted cases per family (default: 10)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the planted cases (default: 0)")
    parser.add_argument(
        "--out", type=Path, default=OUT, help=f"where to write (default: {OUT.relative_to(ROOT)})"
    )
    args = parser.parse_args()
    start = time.perf_counter()
    source_hash = calibration.slow_source_hash()  # of the code just imported: the code that runs
    table = calibration.calibrate_statistics(n_cases=args.n_cases, seed=args.seed, slow=True)
    if fresh_value(FRESH_HASH) != source_hash:
        raise SystemExit(
            "The spectra code changed while the calibration ran, so the table belongs to no version of it: "
            f"nothing written to {args.out}. Rerun tools/calibrate_slow.py once the code has settled."
        )
    record = {
        "provenance": run_provenance(source_hash, args.n_cases, args.seed, time.perf_counter() - start),
        "table": table.to_dict(orient="records"),
    }
    atomic_write(args.out, lambda tmp: tmp.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8"))
    print(table.to_string(index=False))
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
