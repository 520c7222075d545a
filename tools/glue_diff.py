"""Compare the glued values of two book builds: what a refactor changed in the numbers the prose shows.

    python tools/glue_diff.py BEFORE AFTER [--rtol 1e-9] [--allow PREFIX ...]

``BEFORE`` and ``AFTER`` are folders holding myst-nb's ``*.glue.json`` files (a build's
``_build/jupyter_execute``, searched recursively, or a copy of them). Every glued value is compared by its
plain-text form: numbers within ``--rtol`` (relative), everything else exactly. Keys whose name starts with
an ``--allow`` prefix may change (a measurement another issue changes on purpose); the exit status is 1 when
any other key changed, appeared or disappeared, so a refactor that must keep the book's numbers can be
checked by running the book before and after it.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path


def glued_values(folder: Path) -> dict[str, str]:
    """``"chapter:key" -> text/plain`` of every glued value under ``folder``."""
    values = {}
    for path in sorted(folder.rglob("*.glue.json")):
        chapter = path.name.removesuffix(".glue.json")
        for key, output in json.loads(path.read_text(encoding="utf-8")).items():
            values[f"{chapter}:{key}"] = output.get("data", {}).get("text/plain", "")
    return values


def _number(text: str) -> float | None:
    try:
        return float(text.strip().strip("'\""))
    except ValueError:
        return None


def same(before: str, after: str, rtol: float) -> bool:
    """Equal text, or two numbers within ``rtol`` of each other (NaN equals NaN)."""
    if before == after:
        return True
    a, b = _number(before), _number(after)
    if a is None or b is None:
        return False
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=rtol, abs_tol=0.0)


def compare(
    before: dict[str, str], after: dict[str, str], rtol: float = 1e-9, allow: tuple[str, ...] = ()
) -> dict[str, list[tuple[str, str, str]]]:
    """``changed`` / ``allowed`` / ``added`` / ``removed``: ``(key, before, after)`` for each difference.

    ``allow`` holds key prefixes (the part after ``chapter:``, or the whole ``chapter:key``) whose change is
    expected."""

    def allowed(key: str) -> bool:
        name = key.partition(":")[2]
        return any(key.startswith(p) or name.startswith(p) for p in allow)

    result: dict[str, list[tuple[str, str, str]]] = {"changed": [], "allowed": [], "added": [], "removed": []}
    for key in sorted(before.keys() | after.keys()):
        if key not in after:
            result["allowed" if allowed(key) else "removed"].append((key, before[key], ""))
        elif key not in before:
            result["allowed" if allowed(key) else "added"].append((key, "", after[key]))
        elif not same(before[key], after[key], rtol):
            result["allowed" if allowed(key) else "changed"].append((key, before[key], after[key]))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rtol", type=float, default=1e-9, help="relative tolerance for numbers (1e-9)")
    parser.add_argument("--allow", nargs="*", default=[], help="key prefixes that may change")
    args = parser.parse_args(argv)
    for folder in (args.before, args.after):
        if not folder.is_dir():
            parser.error(f"{folder} is not a folder; give a build's _build/jupyter_execute or a copy")
    before, after = glued_values(args.before), glued_values(args.after)
    if not before or not after:
        parser.error("no *.glue.json found: build the book first (bash tools/build_book.sh)")
    result = compare(before, after, args.rtol, tuple(args.allow))
    for kind, rows in result.items():
        for key, old, new in rows:
            print(f"{kind:8} {key}: {old[:60]!r} -> {new[:60]!r}")
    unexpected = sum(len(result[k]) for k in ("changed", "added", "removed"))
    print(
        f"{len(before)} values before, {len(after)} after; {unexpected} unexpected differences, "
        f"{len(result['allowed'])} allowed"
    )
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
