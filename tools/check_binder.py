"""Execute every chapter, appendix page, lab and the course guide as a Binder user would: each page opened
through jupytext (MyST ``.md`` -> notebook) and run by a ``python3`` kernel whose working directory is the
page's folder. Run it with the interpreter of an environment built from ``binder/`` alone:

    python3.11 -m venv /tmp/binder-venv && . /tmp/binder-venv/bin/activate
    pip install jupyterlab notebook nbconvert          # what repo2docker's base image brings
    pip install -r binder/requirements.txt && bash binder/postBuild
    python tools/check_binder.py [--out results/bench/binder_check.json]

Cells tagged ``skip-execution`` (the labs' live widgets) are not run, as in the book. Writes one JSON line per
page and, at the end, the summary with its provenance; exits 1 if any page failed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path

import jupytext
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def pages() -> list[Path]:
    """The book's executable pages: chapters, appendix, labs and the course guide."""
    found = sorted((ROOT / "book").glob("*.md")) + sorted((ROOT / "book" / "appendix").glob("*.md"))
    return found + sorted((ROOT / "notebooks").glob("*.ipynb")) + [ROOT / "notebooks" / "course_guide.md"]


def run_page(path: Path) -> dict:
    """Execute one page; its code cells, how many ran (``skip-execution`` ones excluded) and the error."""
    notebook = jupytext.read(path)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    to_run = [c for c in code if "skip-execution" not in c.metadata.get("tags", [])]
    start, error = time.time(), None
    if to_run:
        try:
            client = NotebookClient(
                notebook,
                timeout=3600,
                kernel_name="python3",
                resources={"metadata": {"path": str(path.parent)}},
            )
            client.execute()
        except Exception as exc:  # the failing cell's error, as nbclient reports it
            error = f"{type(exc).__name__}: {str(exc)[-400:]}"
    return {
        "page": str(path.relative_to(ROOT)),
        "code_cells": len(to_run),
        "executed": sum(c.get("execution_count") is not None for c in to_run),
        "seconds": round(time.time() - start, 1),
        "error": error,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench" / "binder_check.json")
    args = parser.parse_args()
    import torch
    import transformers

    rows = []
    for path in pages():
        rows.append(run_page(path))
        print(json.dumps(rows[-1]), flush=True)
    failed = [r["page"] for r in rows if r["error"] or r["executed"] != r["code_cells"]]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout
    summary = {
        "ran": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit.stdout.strip() + (" + local changes" if dirty.strip() else ""),
        "python": sys.executable,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "pages": rows,
        "failed": failed,
    }
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    tmp.replace(args.out)
    print(f"{len(rows)} pages, {len(failed)} failed: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
