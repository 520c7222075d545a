"""Execute the book's pages two at a time into jupyter-book's execution cache, before ``jupyter-book build``.

    .venv/bin/python tools/execute_pages.py [--jobs 2] [--cache _build/.jupyter_cache]

Jupyter Book 1.x executes its pages one after the other, while a page spends much of its time in single-threaded
Python (bootstraps, fits) that leaves a core idle. This fills the same cache (``execute.cache`` in
``_config.yml``) with the pages of ``_toc.yml`` run in ``--jobs`` kernels at once, the longest first (the
per-page times of the last ``benchmarks/book_build.py`` record), each kernel on one thread so that two never fight
for the two cores. The build then finds every page in the cache and only renders it. The notebook of a page is
read as myst-nb reads it, so the cache keys agree; a page whose key did not match, or that failed here, is simply
executed again by the build, which reports its error as usual: this tool can make a build faster, never
different. Pages share captures through the capture cache, which computes each one once under a lock.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMES = ROOT / "results" / "bench" / "book_build.json"
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def pages() -> list[Path]:
    """The source files of ``_toc.yml``'s pages that are notebooks (``.ipynb``, or MyST Markdown with a kernel)."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    names = [toc["root"]] + [
        chapter["file"] for part in toc.get("parts", []) for chapter in part.get("chapters", [])
    ]
    found = []
    for name in names:
        for suffix in (".md", ".ipynb"):
            path = ROOT / f"{name}{suffix}"
            if path.is_file() and (suffix == ".ipynb" or "kernelspec:" in path.read_text()[:2000]):
                if not _never_executed(path):
                    found.append(path)
    return found


def _never_executed(path: Path) -> bool:
    """Whether a MyST page's front matter says ``mystnb: execution_mode: 'off'`` (a page of prose that carries a
    notebook header only so that JupyterLab saves it unchanged)."""
    import yaml

    text = path.read_text()
    if path.suffix != ".md" or not text.startswith("---\n"):
        return False
    front = yaml.safe_load(text.split("\n---\n", 1)[0].removeprefix("---\n")) or {}
    return (front.get("mystnb") or {}).get("execution_mode") == "off"


@cache
def _extensions() -> set[str]:
    """The MyST extensions of ``_config.yml`` (read once)."""
    import yaml

    return set(yaml.safe_load((ROOT / "_config.yml").read_text())["parse"]["myst_enable_extensions"])


def read_notebook(path: Path):
    """The notebook myst-nb builds from ``path`` (the same reader and Markdown settings as the build)."""
    from myst_nb.core.config import NbParserConfig
    from myst_nb.core.read import create_nb_reader
    from myst_parser.config.main import MdParserConfig

    text = path.read_text()
    reader = create_nb_reader(
        str(path), MdParserConfig(enable_extensions=_extensions()), NbParserConfig(), text
    )
    if reader is None:
        raise ValueError(f"{path} is not a notebook myst-nb can read")
    return reader.read(text)


def _execute(path: str, timeout: int) -> tuple[str, object, float, str | None]:
    """Run one page in its own folder (as myst-nb does): the executed notebook, seconds, and the error if any."""
    from jupyter_cache.executors.utils import single_nb_execution

    os.environ.update(ONE_THREAD)
    notebook = read_notebook(Path(path))
    timeout = notebook.metadata.get("mystnb", {}).get("execution_timeout", timeout)
    result = single_nb_execution(
        notebook, cwd=str(Path(path).parent), allow_errors=False, timeout=timeout, meta_override=True
    )
    return path, notebook, result.time, (result.exc_string if result.err is not None else None)


def longest_first(paths: list[Path]) -> list[Path]:
    """``paths`` ordered by their executed seconds in the last build record (unknown pages first)."""
    seconds = {}
    if TIMES.is_file():
        seconds = json.loads(TIMES.read_text()).get("pages", {})
    return sorted(paths, key=lambda p: -seconds.get(str(p.relative_to(ROOT)), float("inf")))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--cache", type=Path, default=ROOT / "_build" / ".jupyter_cache")
    parser.add_argument("--timeout", type=int, default=900)
    args = parser.parse_args(argv)
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    cache = get_cache(str(args.cache))
    todo = []
    for path in pages():
        notebook = read_notebook(path)
        if notebook.metadata.get("mystnb", {}).get("execution_mode", "cache") != "cache":
            continue  # a page that asks to run at every build (execution_mode: force) runs in the build
        try:
            cache.match_cache_notebook(notebook)
        except KeyError:
            todo.append(path)
    todo = longest_first(todo)
    print(f"execute_pages: {len(todo)} page(s) to execute, {args.jobs} at a time", flush=True)
    start, failed = time.perf_counter(), []
    with ProcessPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(_execute, str(path), args.timeout) for path in todo]
        for future in as_completed(futures):
            path, notebook, seconds, error = future.result()
            name = Path(path).relative_to(ROOT)
            if error is not None:  # left to the build, which executes it again and reports the error
                failed.append(str(name))
                print(
                    f"execute_pages: {name} failed after {seconds:.0f} s; the build will run it", flush=True
                )
                continue
            cache.cache_notebook_bundle(
                CacheBundleIn(notebook, path, data={"execution_seconds": seconds}),
                check_validity=False,
                overwrite=True,
            )
            print(f"execute_pages: {name} in {seconds:.0f} s", flush=True)
    print(
        f"execute_pages: done in {time.perf_counter() - start:.0f} s; failed: {failed or 'none'}", flush=True
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
