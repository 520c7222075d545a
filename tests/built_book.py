"""The executed book, for tests that read it: its glued values, and whether the build is current.

The prose of a chapter states relations between glued numbers ("the twin stays below the Gaussian value",
"shuffled text gives the higher Omega"). Those relations are checked by ``tests/test_claims_*.py`` over the
values the last build glued (``_build/jupyter_execute/**/<page>.glue.json``), not by asserts in the chapters'
cells: a reader sees the calls that compute a result, and a relation that stops holding fails a named test.

``tools/build_book.sh`` runs those tests after every build (so ``make book`` fails on a claim that no longer holds,
as the asserts did), and ``.ci/run`` after the CI build. Without a build they are skipped, unless
``LATENTBOOK_REQUIRE_BUILD=1`` (set by both), which turns a missing build into a failure. A build older than
its sources fails them; ``LATENTBOOK_ANY_BUILD=1`` accepts it (while editing a chapter's prose or tests only).
``LATENTBOOK_EXECUTED=FOLDER`` reads a page executed alone instead (``tools/run_page.py --out FOLDER``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "_build"
EXECUTED = BUILD / "jupyter_execute"
MARKER = BUILD / ".package-source-hash"  # written by tools/build_book.sh after every build
SOURCES = ("book", "notebooks", "src/latentbook", "_css", "_config.yml", "_toc.yml", "references.bib")


def newest_source() -> tuple[float, Path]:
    """The newest modification time among the files the built book is made from, and that file."""
    files = [ROOT / p for p in SOURCES if (ROOT / p).is_file()]
    files += [f for p in SOURCES if (ROOT / p).is_dir() for f in (ROOT / p).rglob("*") if f.is_file()]
    files = [f for f in files if "__pycache__" not in f.parts]
    newest = max(files, key=lambda f: f.stat().st_mtime)
    return newest.stat().st_mtime, newest


def _value(text: str) -> float | str:
    """A glued value's plain text as a number where it is one (``np.float64(0.5)`` included), else the string."""
    text = text.strip()
    if text.startswith("np.") and text.endswith(")"):
        text = text[text.index("(") + 1 : -1]
    try:
        return float(text)
    except ValueError:
        return text.strip("'\"")


def glued(page: str) -> dict[str, float | str]:
    """``key -> value`` of everything ``page`` (``"omega"``, ``"appendix/verdict_criteria"``) glued in the last
    build; skips (or fails, with ``LATENTBOOK_REQUIRE_BUILD=1``) when there is no build, fails when it is stale."""
    folder = Path(os.environ.get("LATENTBOOK_EXECUTED", EXECUTED))
    path = folder / "book" / f"{page}.glue.json"
    if not path.is_file():
        message = f"no executed {page} in {folder}: run `make book` first"
        if os.environ.get("LATENTBOOK_REQUIRE_BUILD") == "1":
            pytest.fail(message)
        pytest.skip(message)
    built = max(path.stat().st_mtime, MARKER.stat().st_mtime if MARKER.is_file() else 0.0)
    newest, source = newest_source()
    if (
        newest > built
        and "LATENTBOOK_EXECUTED" not in os.environ
        and os.environ.get("LATENTBOOK_ANY_BUILD") != "1"
    ):
        pytest.fail(f"the executed book is older than {source.relative_to(ROOT)}: rebuild it (make book)")
    outputs = json.loads(path.read_text(encoding="utf-8"))
    return {key: _value(out.get("data", {}).get("text/plain", "")) for key, out in outputs.items()}
