"""Student copies of the labs: every solution removed, the exercise skeletons shown, outputs cleared.

    python tools/make_student_copies.py                 # writes _build/student/<lab>.ipynb
    python tools/make_student_copies.py --out DIR LAB.ipynb ...
    python tools/make_student_copies.py --verify-only   # CI: exit 1 if a copy would leak or a lab is malformed

A lab notebook marks each exercise as consecutive cells (see notebooks/course_guide.md):
``{exercise}`` markdown with a ``:label:``; a code cell tagged ``skeleton`` (hidden in the book by
``remove-cell``); ``{solution-start} <label>`` markdown; the solution's code cells, tagged ``solution``;
``{solution-end}`` markdown; a code cell tagged ``check``. The copy drops everything from ``solution-start``
to ``solution-end``, shows the skeleton (its ``remove-cell`` tag removed), turns the ``{exercise}`` directive
into a plain heading (Jupyter does not render MyST directives) and clears every output.
``--verify-only`` builds the copies in memory and checks that the sources are committed without outputs, every
exercise has one skeleton, one solution block and one check, and no copy contains a solution directive, a
``solution`` cell or any solution code.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
LABS = sorted((ROOT / "notebooks").glob("lab*.ipynb"))
EXERCISE = re.compile(
    r"^```\{exercise\}\s*(?P<title>.*?)\n(?P<options>(?::[^\n]*\n)*)\n?(?P<body>.*?)\n?```\s*$", re.S
)
LABEL = re.compile(r"^:label:\s*(\S+)", re.M)
SOLUTION_START = re.compile(r"^```\{solution-start\}\s*(\S+)")
SOLUTION_END = re.compile(r"^```\{solution-end\}")


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _exercise_label(cell) -> str | None:
    if cell.cell_type != "markdown":
        return None
    match = EXERCISE.match(cell.source.strip())
    if match is None:
        return None
    label = LABEL.search(match.group("options"))
    return label.group(1) if label else ""


def problems(notebook, name: str) -> list[str]:
    """What is wrong with a lab's structure (empty when every exercise is well formed)."""
    found: list[str] = []
    cells = notebook.cells
    labels = [label for cell in cells if (label := _exercise_label(cell)) is not None]
    if not labels:
        found.append(f"{name}: no {{exercise}} cells")
    for i, cell in enumerate(cells):
        label = _exercise_label(cell)
        if label is None:
            continue
        if not label:
            found.append(f"{name}: the exercise in cell {i} has no :label:")
            continue
        window = cells[i + 1 : i + 3]
        kinds = [
            "skeleton" if "skeleton" in _tags(c) else "start" if SOLUTION_START.match(c.source) else "other"
            for c in window
        ]
        if kinds != ["skeleton", "start"] or SOLUTION_START.match(window[1].source).group(1) != label:
            found.append(
                f"{name}: exercise {label} must be followed by a skeleton cell and "
                f"```{{solution-start}} {label}"
            )
            continue
        j = i + 3
        while j < len(cells) and not SOLUTION_END.match(cells[j].source):
            if cells[j].cell_type == "code" and "solution" not in _tags(cells[j]):
                found.append(f"{name}: code cell {j} inside the solution of {label} is not tagged 'solution'")
            j += 1
        if j == len(cells):
            found.append(f"{name}: the solution of {label} has no ```{{solution-end}}")
        elif j + 1 >= len(cells) or "check" not in _tags(cells[j + 1]):
            found.append(f"{name}: the solution of {label} must be followed by a cell tagged 'check'")
    starts = [c for c in cells if SOLUTION_START.match(c.source)]
    if len(starts) != len(labels):
        found.append(f"{name}: {len(starts)} solution blocks for {len(labels)} exercises")
    for i, cell in enumerate(cells):
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count") is not None):
            found.append(
                f"{name}: code cell {i} has outputs; commit labs without outputs (the book runs them)"
            )
    return found


def _plain_exercise(cell) -> None:
    match = EXERCISE.match(cell.source.strip())
    cell.source = f"### Exercise: {match.group('title').strip()}\n\n{match.group('body').strip()}"


def student_copy(notebook):
    """A copy of ``notebook`` with the solution blocks removed, skeletons shown and outputs cleared."""
    copy = nbformat.reads(nbformat.writes(notebook), as_version=4)
    kept = []
    inside = False
    for cell in copy.cells:
        if SOLUTION_START.match(cell.source):
            inside = True
        if not inside:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
                tags = [t for t in _tags(cell) if t != "remove-cell"]
                if tags:
                    cell.metadata["tags"] = tags
                else:
                    cell.metadata.pop("tags", None)
            elif _exercise_label(cell) is not None:
                _plain_exercise(cell)
            kept.append(cell)
        elif SOLUTION_END.match(cell.source):
            inside = False
    copy.cells = kept
    return copy


def leaks(original, copy, name: str) -> list[str]:
    """Ways the student copy of ``original`` still shows a solution."""
    found: list[str] = []
    solutions = [c.source.strip() for c in original.cells if "solution" in _tags(c)]
    for i, cell in enumerate(copy.cells):
        text = cell.source
        if "{solution" in text or "solution" in _tags(cell):
            found.append(f"{name}: cell {i} of the copy still holds a solution block")
        for solution in solutions:
            body = [
                line
                for line in solution.splitlines()[1:]
                if line.strip() and not line.strip().startswith('"""')
            ]
            if body and all(line in text for line in body):
                found.append(f"{name}: cell {i} of the copy contains solution code")
        if cell.cell_type == "code" and cell.get("outputs"):
            found.append(f"{name}: cell {i} of the copy has outputs")
    skeletons = sum("skeleton" in _tags(c) for c in copy.cells)
    exercises = sum(c.cell_type == "markdown" and c.source.startswith("### Exercise:") for c in copy.cells)
    if skeletons != exercises:
        found.append(f"{name}: {exercises} exercises but {skeletons} skeleton cells in the copy")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "notebooks", nargs="*", type=Path, help="lab notebooks (default: notebooks/lab*.ipynb)"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "student", help="folder for the copies")
    parser.add_argument(
        "--verify-only", action="store_true", help="check, write nothing; exit 1 on a problem"
    )
    args = parser.parse_args(argv)
    paths = args.notebooks or LABS
    if not paths:
        print("make_student_copies: no lab notebooks found", file=sys.stderr)
        return 1
    found: list[str] = []
    copies = {}
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        found += problems(notebook, path.name)
        copy = student_copy(notebook)
        found += leaks(notebook, copy, path.name)
        copies[path.name] = copy
    if found:
        print("\n".join(found), file=sys.stderr)
        return 1
    if args.verify_only:
        print(f"make_student_copies: {len(copies)} student copies would be clean")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, copy in copies.items():
        nbformat.write(copy, args.out / name)
    print(f"make_student_copies: wrote {len(copies)} student copies to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
