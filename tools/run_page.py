"""Execute one page of the book as the build does, and keep its glued values: a chapter checked in minutes.

    .venv/bin/python tools/run_page.py book/omega.md [--out _build/page]

The page runs in its own folder with the build's reader (``tools/execute_pages.py``); the executed notebook is
written to ``OUT/<page>.ipynb`` and its glued values to ``OUT/book/<page>.glue.json`` in myst-nb's layout, so
that the claims tests read them (``LATENTBOOK_EXECUTED=OUT pytest tests/test_claims_<page>.py``) and
``tools/glue_diff.py`` compares them with a build's. Exit status 1 (and the cell's error) when a cell fails.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from execute_pages import _execute  # noqa: E402


def glue_outputs(notebook) -> dict:
    """``name -> output`` of every value the notebook glued, as myst-nb writes them to ``*.glue.json``."""
    from myst_nb.ext.glue import extract_glue_data_cell

    return {
        key: output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for key, output in extract_glue_data_cell(cell)
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("page", type=Path, help="a page of _toc.yml, e.g. book/omega.md")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "page")
    parser.add_argument("--timeout", type=int, default=1800)
    args = parser.parse_args(argv)
    page = args.page.resolve()
    if not page.is_file():
        parser.error(f"no page {args.page}: give a path such as book/omega.md")
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    _, notebook, seconds, error = _execute(str(page), args.timeout)
    relative = page.relative_to(ROOT).with_suffix("")
    executed = args.out / relative.with_suffix(".ipynb")
    glue = args.out / relative.parent / f"{relative.name}.glue.json"
    executed.parent.mkdir(parents=True, exist_ok=True)
    import nbformat

    from latentbook._files import atomic_write  # neither file is ever readable half-written

    atomic_write(executed, lambda tmp: nbformat.write(notebook, tmp))
    atomic_write(
        glue, lambda tmp: tmp.write_text(json.dumps(glue_outputs(notebook), indent=1), encoding="utf-8")
    )
    print(f"{relative}: {seconds:.0f} s -> {executed} and {glue}")
    if error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
