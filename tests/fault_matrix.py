"""The fault matrix: every fault test says which case it covers and what a user sees.

Usage:

1. mark a test with ``@fault(area, case, error=SomeLatentbookError, says="phrase of the message")``, or
   with ``@fault(area, case, outcome="what happens instead of an error")`` when the case must not raise;
2. inside the test, ``with raises():`` (a fixture of ``test_faults.py``) expects exactly that error class
   with that phrase in its message, so the matrix cannot promise a message the code does not give;
3. ``collect()`` reads the marks back from the test files' source with ``ast`` (no import, no pytest), and
   the book's appendix page ``book/appendix/faults.md`` renders them: the page lists the tests that exist.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

TESTS = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Fault:
    """One row of the matrix: the area and case, the error class (or None), the phrase / outcome a user sees."""

    area: str
    case: str
    error: type | None = None
    says: str | None = None
    outcome: str | None = None


def fault(
    area: str, case: str, *, error: type | None = None, says: str | None = None, outcome: str | None = None
):
    """Mark a test as covering ``case`` of ``area``; either ``error`` and ``says``, or ``outcome``."""
    if (error is None) == (outcome is None) or (error is not None and not says):
        raise ValueError("give error= with says=, or outcome=")

    def mark(test):
        test.fault = Fault(area, case, error, says, outcome)
        return test

    return mark


def collect(files: list[Path] | None = None) -> list[dict[str, str | int | None]]:
    """Rows ``area, case, error, says, outcome, test, file, line`` of every ``@fault`` test, in file order."""
    rows = []
    for path in files or sorted(TESTS.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef):
                continue
            for decorator in node.decorator_list:
                if (
                    isinstance(decorator, ast.Call)
                    and isinstance(decorator.func, ast.Name)
                    and decorator.func.id == "fault"
                ):
                    keywords = {k.arg: k.value for k in decorator.keywords}
                    error = keywords.get("error")
                    rows.append(
                        {
                            "area": ast.literal_eval(decorator.args[0]),
                            "case": ast.literal_eval(decorator.args[1]),
                            "error": error.id if isinstance(error, ast.Name) else None,
                            "says": _literal(keywords.get("says")),
                            "outcome": _literal(keywords.get("outcome")),
                            "test": node.name,
                            "file": str(path.relative_to(TESTS.parent)),
                            "line": node.lineno,
                        }
                    )
    return rows


def _literal(node: ast.expr | None):
    return None if node is None else ast.literal_eval(node)
