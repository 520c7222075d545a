"""Measure chapter 9's landmarks of depth on every trained rung of the ladder and its untrained null, into the
ladder's folder (``study.ladder_landmarks``), for chapter 7 to show::

    .venv/bin/python tools/ladder_landmarks.py                       # results/ladder-v2 (a few minutes, 2 cores)
    .venv/bin/python tools/ladder_landmarks.py --out /tmp/lm.json --rungs l4-d64-s0
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--ladder", type=Path, default=ROOT / "results" / "ladder-v2", help="the ladder's folder"
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="where to write (default: LADDER/landmarks.json)"
    )
    parser.add_argument("--rungs", default=None, help="comma-separated rungs (default: every trained rung)")
    args = parser.parse_args()
    if not args.ladder.is_dir():
        parser.error(f"--ladder {args.ladder} is not a folder")
    os.environ["LATENTBOOK_LADDER_DIR"] = str(args.ladder)
    from latentbook.study.ladder_landmarks import measure_landmarks

    rungs = [r for r in args.rungs.split(",") if r] if args.rungs is not None else None
    if rungs == []:
        parser.error("--rungs names no rung")
    print("written:", measure_landmarks(args.out, rungs))


if __name__ == "__main__":
    main()
