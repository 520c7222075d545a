"""What the scripts that keep long runs in ``results/`` record of the code they ran on (imported by them as a
sibling module: ``python tools/<script>.py`` puts ``tools/`` on the path)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def git_commit() -> str | None:
    """The repository's ``HEAD``, or None outside a git checkout."""
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def fresh_value(code: str) -> str:
    """What ``code`` prints in a new interpreter: a source hash of the files as they are now (the running one holds
    the code it imported; ``inspect`` would read the new files at the old line numbers)."""
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def run_provenance(source_hash: str, n_cases: int, seed: int, seconds: float, **settings) -> dict:
    """What a calibration record keeps of its run: the package version, the source hash of the code it ran on,
    the commit, the date, its cases and seed, any ``settings``, and how long it took."""
    from datetime import datetime, timezone

    from latentbook._version import __version__

    return {
        "latentbook": __version__,
        "source_hash": source_hash,
        "git_commit": git_commit(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "n_cases": n_cases,
        "seed": seed,
        **settings,
        "seconds": round(seconds, 1),
    }


def calibration_main(module, script: str, description: str, **settings) -> None:
    """The command line of a calibration script: run ``module.calibrate(n_cases, seed=, jobs=)``, refuse to write
    when the code changed while it ran (``module.source_hash`` read again in a fresh interpreter), and write the
    records with their provenance (``run_provenance``, ``settings`` included) to ``results/<module.FILE>`` or
    ``--out``, atomically; print ``module.confusion(records)``."""
    import argparse
    import json
    import time

    from latentbook._files import atomic_write

    out = ROOT / "results" / module.FILE
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument("--n-cases", type=int, default=74, help="cases per family (default: 74)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the planted cases (default: 0)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default: 1)")
    parser.add_argument(
        "--out", type=Path, default=out, help=f"where to write (default: {out.relative_to(ROOT)})"
    )
    args = parser.parse_args()
    if args.out.exists() and args.out.is_dir():
        raise SystemExit(
            f"--out {args.out} is a folder: give a file name (e.g. {args.out / Path(module.FILE).name})."
        )
    if args.out.exists() and not _is_calibration_record(args.out):
        raise SystemExit(
            f"--out {args.out} is a file that is not a calibration record, and it would be lost: choose another --out."
        )
    start = time.perf_counter()
    source_hash = module.source_hash()  # of the code just imported: the code that runs
    records = module.calibrate(args.n_cases, seed=args.seed, jobs=args.jobs)
    if fresh_value(f"from {module.__name__} import source_hash; print(source_hash())") != source_hash:
        raise SystemExit(
            "The code changed while the calibration ran, so the records belong to no version of it: nothing "
            f"written to {args.out}. Rerun tools/{script} once the code has settled."
        )
    provenance = run_provenance(source_hash, args.n_cases, args.seed, time.perf_counter() - start, **settings)
    record = {"provenance": provenance, "records": records}
    atomic_write(args.out, lambda tmp: tmp.write_text(json.dumps(record, indent=0) + "\n", encoding="utf-8"))
    print(module.confusion(records).to_string(index=False))
    print(f"written: {args.out}")


def _is_calibration_record(path: Path) -> bool:
    """Whether ``path`` holds what ``calibration_main`` writes (JSON with ``provenance`` and ``records``)."""
    import json

    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(record, dict) and {"provenance", "records"} <= set(record)
