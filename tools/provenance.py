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
