"""Calibrate the verdict rows end to end on planted models (``study.planted_calibration``) and keep the records in
``results/calibration/planted_models.json`` with their provenance, for chapter 8 to show::

    .venv/bin/python tools/calibrate_planted.py --jobs 2              # 74 cases per family (about an hour, 2 cores)
    .venv/bin/python tools/calibrate_planted.py --n-cases 2 --out /tmp/smoke.json    # a smoke test

74 cases is the fewest whose Wilson 95 % upper bound reaches the 5 % target with no false "holds". Rerun it
whenever planting, capture, an Omega or spectral estimator, a judge or the rows change: the file records
``planted_calibration.source_hash()`` of the code it ran on, and chapter 8 says so when the code has changed.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from provenance import fresh_value, run_provenance

from latentbook._files import atomic_write
from latentbook.study import planted_calibration

ROOT = Path(__file__).resolve().parents[1]
FRESH_HASH = "from latentbook.study import planted_calibration as p; print(p.source_hash())"
OUT = ROOT / "results" / planted_calibration.FILE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-cases", type=int, default=74, help="cases per family (default: 74)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the planted cases (default: 0)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default: 1)")
    parser.add_argument(
        "--out", type=Path, default=OUT, help=f"where to write (default: {OUT.relative_to(ROOT)})"
    )
    args = parser.parse_args()
    if args.out.exists() and args.out.is_dir():
        raise SystemExit(
            f"--out {args.out} is a folder: give a file name (e.g. {args.out / 'planted.json'})."
        )
    start = time.perf_counter()
    source_hash = planted_calibration.source_hash()  # of the code just imported: the code that runs
    records = planted_calibration.calibrate(args.n_cases, seed=args.seed, jobs=args.jobs)
    if fresh_value(FRESH_HASH) != source_hash:
        raise SystemExit(
            "The code changed while the calibration ran, so the records belong to no version of it: nothing "
            f"written to {args.out}. Rerun tools/calibrate_planted.py once the code has settled."
        )
    record = {
        "provenance": run_provenance(
            source_hash,
            args.n_cases,
            args.seed,
            time.perf_counter() - start,
            capture=planted_calibration.CAPTURE,
        ),
        "records": records,
    }
    atomic_write(args.out, lambda tmp: tmp.write_text(json.dumps(record, indent=0) + "\n", encoding="utf-8"))
    print(planted_calibration.confusion(records).to_string(index=False))
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
