"""How long a cold ``make book`` takes on this machine, page by page.

Builds the book as CI does (``LATENTBOOK_BOOK_FRESH=1 bash tools/build_book.sh --all -W --keep-going``): the
execution cache and the capture cache start empty, so every page executes and every run is captured. The model
cache (the GGUF files assembled into Hugging Face folders, under ``latentbook._files.cache_dir()``) is kept unless
``--empty-model-cache``, and the output says which. Per page: the execution seconds jupyter-cache records for it (a run
captured by one page is read from the capture cache by the next, so a page's time includes the captures it was
the first to need); the rest of the wall time is Sphinx (reading, writing, the vendored scripts). The 1-minute load average is
sampled through the build: a build beside other work is slower than the figures of an idle machine, and the
table says how busy the machine was. Writes ``results/bench/book_build.json`` and ``.md`` (the performance
appendix reads them). Usage::

    .venv/bin/python benchmarks/book_build.py                       # model cache kept (20-30 minutes here)
    .venv/bin/python benchmarks/book_build.py --empty-model-cache   # from nothing but the installed packages
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ["bash", "tools/build_book.sh", "--all", "-W", "--keep-going"]
TARGET_MINUTES = {"kept": 10.0, "empty": 12.0}  # the cold-build targets, model cache kept / empty


class LoadSampler(threading.Thread):
    """The largest and the mean 1-minute load average, sampled every ``every`` seconds until ``stop()``."""

    def __init__(self, every: float = 15.0):
        super().__init__(daemon=True)
        self.every, self.samples, self._done = every, [], threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            self.samples.append(os.getloadavg()[0])
            self._done.wait(self.every)

    def stop(self) -> dict:
        self._done.set()
        self.join()
        return {
            "max": max(self.samples),
            "mean": sum(self.samples) / len(self.samples),
            "n": len(self.samples),
        }


def page_seconds(cache_folder: Path) -> dict[str, float]:
    """Execution seconds of each page, as jupyter-cache recorded them, by path relative to the repository."""
    from jupyter_cache import get_cache

    records = get_cache(str(cache_folder)).list_cache_records()
    return {
        str(Path(record.uri).resolve().relative_to(ROOT)): float(record.data.get("execution_seconds", "nan"))
        for record in records
    }


def build(empty_model_cache: bool, log: Path) -> dict:
    """Run the cold build; its wall and CPU seconds, exit status, load and the pages' execution seconds."""
    env = os.environ | {"LATENTBOOK_BOOK_FRESH": "1"}
    if empty_model_cache:
        env["LATENTBOOK_CACHE"] = tempfile.mkdtemp(prefix="latentbook-cache-")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    sampler = LoadSampler()
    sampler.start()
    start = time.perf_counter()
    with log.open("w") as out:
        status = subprocess.run(BUILD, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    text = log.read_text(errors="replace")
    done = re.findall(r"execute_pages: done in (\d+) s", text)
    return {
        "status": status,
        "wall_s": wall,
        "cpu_s": cpu,
        "load_average": sampler.stop(),
        "pages": page_seconds(ROOT / "_build" / ".jupyter_cache"),
        # tools/execute_pages.py: the pages run this many at a time, for this long, before Sphinx renders them
        "page_jobs": int(env.get("LATENTBOOK_BOOK_JOBS", "2")),
        "pages_wall_s": float(done[-1]) if done else None,
        # pages Sphinx executed itself: those that ask for it (execution_mode: force), and any whose cache key
        # did not match the pre-executed notebook's (a regression of tools/execute_pages.py: they run twice)
        "pages_run_in_sphinx": sorted(
            str(Path(path).relative_to(ROOT))
            for path in re.findall(r"^(\S+): Executing notebook", text, re.M)
        ),
    }


def _git_commit() -> str:
    run = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return run.stdout.strip() or "unknown"


def _page_line(record: dict, executed: float) -> str:
    """Where the wall time went: the pages (run ``page_jobs`` at a time when ``tools/execute_pages.py`` ran them
    before Sphinx), then Sphinx and setup."""
    parallel = record.get("pages_wall_s")
    if parallel is None:  # executed one after the other inside Sphinx
        return f"pages executing {executed / 60:.1f} min, Sphinx and setup {(record['wall_s'] - executed) / 60:.1f} min."
    return (
        f"pages executing {executed / 60:.1f} min of page time in {parallel / 60:.1f} min of wall, "
        f"{record['page_jobs']} at a time (`tools/execute_pages.py`); Sphinx and setup "
        f"{(record['wall_s'] - parallel) / 60:.1f} min."
    )


def markdown(record: dict) -> str:
    """The table of ``record``: the build's totals, its target, then every page by execution time."""
    pages = sorted(record["pages"].items(), key=lambda item: -item[1])
    executed = sum(seconds for _, seconds in pages)
    cache = record["model_cache"]
    target = TARGET_MINUTES[cache]
    minutes = record["wall_s"] / 60
    load = record["load_average"]
    lines = [
        f"# Cold book build ({'model cache kept' if cache == 'kept' else 'empty model cache'})",
        "",
        f"{record['machine']['cpu']}, {record['machine']['cores']} cores; {record['date']}; commit "
        f"{record['git_commit'][:12]}; exit status {record['status']}. 1-minute load average during the build: "
        f"mean {load['mean']:.1f}, max {load['max']:.1f} (the build alone keeps it near 1-2; well above "
        f"{record['machine']['cores']}, other work shared the cores).",
        "",
        f"Wall {minutes:.1f} min against a target of {target:.0f} min ({'met' if minutes <= target else 'missed'}); "
        f"CPU {record['cpu_s'] / 60:.1f} min; {_page_line(record, executed)}",
        "",
        f"Pages Sphinx executed itself: {', '.join(record.get('pages_run_in_sphinx', [])) or 'none'}.",
        "",
        "| page | executed s | share of page time |",
        "|---|---:|---:|",
    ]
    lines += [f"| {page} | {seconds:.0f} | {seconds / executed:.0%} |" for page, seconds in pages]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--empty-model-cache", action="store_true", help="assemble the models again too")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench", help="folder of the tables")
    args = parser.parse_args(argv)
    if not args.out.is_dir():
        parser.error(f"--out {args.out} is not a folder")
    log = ROOT / "_build-bench.log"
    record = build(args.empty_model_cache, log)
    record |= {
        "model_cache": "empty" if args.empty_model_cache else "kept",
        "command": "LATENTBOOK_BOOK_FRESH=1 " + " ".join(BUILD),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": _git_commit(),
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()},
        "python": sys.version.split()[0],
    }
    if record["status"] != 0:
        print(f"the build failed (exit {record['status']}); see {log}. Nothing written.", file=sys.stderr)
        return 1
    stem = "book_build" if record["model_cache"] == "kept" else "book_build_empty_cache"
    for suffix, text in ((".json", json.dumps(record, indent=1) + "\n"), (".md", markdown(record))):
        temporary = args.out / f".{stem}{suffix}.tmp"
        temporary.write_text(text)
        temporary.replace(args.out / f"{stem}{suffix}")
    print(markdown(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
